#include "tandem/engine/fallback_template.h"

namespace tandem::engine {

std::string fallback_chat_template(const Model& model, const tokenizer::Tokenizer& tok) {
    switch (model.hp.arch) {
        case Arch::Gemma3:
            // Gemma has no system role: a system message goes in front of the first user turn
            // (a namespace, because a plain `set` inside a loop does not outlive the iteration).
            return "{{ bos_token }}{% set ns = namespace(sys='') %}{% for m in messages %}"
                   "{% if m['role'] == 'system' %}{% set ns.sys = m['content'] + '\n\n' %}"
                   "{% else %}{{ '<start_of_turn>' + ('model' if m['role'] == 'assistant' else "
                   "'user') + '\n' }}{{ ns.sys if m['role'] == 'user' else '' }}"
                   "{% if m['role'] == 'user' %}{% set ns.sys = '' %}{% endif %}"
                   "{{ m['content'] | trim }}<end_of_turn>\n{% endif %}{% endfor %}"
                   "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}";
        case Arch::Qwen2:
        case Arch::Qwen3:
        case Arch::Qwen3Moe:
            return "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
                   "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
                   "{% endif %}";
        case Arch::Llama:
            if (tok.find("<|start_header_id|>") >= 0)
                return "{{ bos_token }}{% for m in messages %}<|start_header_id|>{{ m['role'] }}"
                       "<|end_header_id|>\n\n{{ m['content'] | trim }}<|eot_id|>{% endfor %}"
                       "{% if add_generation_prompt %}<|start_header_id|>assistant"
                       "<|end_header_id|>\n\n{% endif %}";
            // Llama 2 / Mistral [INST] format.
            return "{% for m in messages %}{% if m['role'] == 'user' %}{{ bos_token }}[INST] "
                   "{{ m['content'] | trim }} [/INST]{% elif m['role'] == 'assistant' %} "
                   "{{ m['content'] | trim }}{{ eos_token }}{% else %}<<SYS>>\n{{ m['content'] "
                   "}}\n<</SYS>>\n\n{% endif %}{% endfor %}";
    }
    return "";
}

std::string chat_template_for(const Model& model, const tokenizer::Tokenizer& tok) {
    const auto& own = tok.vocab().chat_template;
    if (!own.empty()) return own;
    std::string fb = fallback_chat_template(model, tok);
    if (!fb.empty()) return fb;
    return "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
           "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
}

}  // namespace tandem::engine
