// tandem-cli run / chat: a model for people. The prompt goes through the model's chat template
// (or a per-architecture fallback when the GGUF has none), output streams as it is made, and
// tokens/s are reported at the end. chat keeps the conversation (and its KV cache) across turns.
#include <cstdio>
#include <iostream>

#include "command.h"
#include "runtime_options.h"
#include "tandem/common/error.h"
#include "tandem/engine/fallback_template.h"
#include "tandem/engine/generate.h"
#include "tandem/template/template.h"

namespace {

using tandem::engine::Arch;

struct ChatState {
    tandem::cli::RuntimeOptions rt;
    tandem::engine::SamplingParams sampling;
    std::string prompt, system;
    int n = 512;
    bool raw = false, show_stats = true;
};

std::string token_text(const tandem::tokenizer::Tokenizer& tok, int32_t id) {
    return id >= 0 ? tok.token_to_piece(id, true) : std::string();
}

std::string render(const tandem::cli::OpenModel& m, const nlohmann::ordered_json& messages) {
    const auto& vocab = m.tokenizer().vocab();
    std::string source = vocab.chat_template.empty()
                             ? tandem::engine::fallback_chat_template(*m.model, m.tokenizer())
                             : vocab.chat_template;
    nlohmann::ordered_json ctx = {{"messages", messages},
                                  {"add_generation_prompt", true},
                                  {"bos_token", token_text(*m.tok, vocab.bos_id)},
                                  {"eos_token", token_text(*m.tok, vocab.eos_id)}};
    return tandem::render_template(source, ctx);
}

// One assistant turn: renders, reuses the cached prefix, streams the reply.
std::string reply(tandem::cli::OpenModel& m, const ChatState& s,
                  const nlohmann::ordered_json& messages) {
    const std::string text = render(m, messages);
    // The template writes BOS itself; special tokens in it are parsed as such.
    auto ids = m.tokenizer().encode(text, false, true);
    tandem::engine::GenerateOptions g;
    g.max_tokens = s.n;
    g.sampling = s.sampling;
    g.on_text = [](std::string_view t) {
        std::fwrite(t.data(), 1, t.size(), stdout);
        std::fflush(stdout);
        return true;
    };
    auto r = tandem::engine::generate(*m.engine, ids, &*m.tok, g);
    std::printf("\n");
    if (s.show_stats)
        std::fprintf(
            stderr,
            "[%lld prompt tokens (%lld cached) at %.1f tok/s, %zu generated at %.1f tok/s, stop: "
            "%s]\n",
            static_cast<long long>(r.n_prompt), static_cast<long long>(r.n_reused),
            r.prefill_seconds > 0 ? double(r.n_prompt - r.n_reused) / r.prefill_seconds : 0.0,
            r.ids.size(), r.decode_seconds > 0 ? double(r.n_decoded) / r.decode_seconds : 0.0,
            tandem::engine::stop_reason_name(r.stop));
    return r.text;
}

void add_chat_options(CLI::App& sub, ChatState& s) {
    tandem::cli::add_runtime_options(sub, s.rt);
    tandem::cli::add_sampling_options(sub, s.sampling);
    sub.add_option("-n,--n-predict", s.n, "most tokens per reply")->capture_default_str();
    sub.add_option("-s,--system", s.system, "system message");
}

tandem::cli::Register run_reg(
    "run", "Answer one prompt through the model's chat template", [](CLI::App& sub) {
        auto s = std::make_shared<ChatState>();
        add_chat_options(sub, *s);
        sub.add_option("-p,--prompt", s->prompt, "the prompt")->required();
        sub.add_flag("--raw", s->raw, "no chat template: continue the text as it is");
        return [s]() -> int {
            auto m = tandem::cli::open_model(s->rt, true);
            if (s->raw) {
                auto ids = m.tokenizer().encode(s->prompt, true, true);
                tandem::engine::GenerateOptions g;
                g.max_tokens = s->n;
                g.sampling = s->sampling;
                std::fputs(s->prompt.c_str(), stdout);
                g.on_text = [](std::string_view t) {
                    std::fwrite(t.data(), 1, t.size(), stdout);
                    std::fflush(stdout);
                    return true;
                };
                auto r = tandem::engine::generate(*m.engine, ids, &*m.tok, g);
                std::fprintf(stderr, "\n[%zu tokens at %.1f tok/s]\n", r.ids.size(),
                             r.decode_seconds > 0 ? double(r.n_decoded) / r.decode_seconds : 0.0);
                return 0;
            }
            nlohmann::ordered_json messages = nlohmann::ordered_json::array();
            if (!s->system.empty())
                messages.push_back({{"role", "system"}, {"content", s->system}});
            messages.push_back({{"role", "user"}, {"content", s->prompt}});
            reply(m, *s, messages);
            return 0;
        };
    });

tandem::cli::Register chat_reg(
    "chat", "Chat with a model in the terminal (/exit to leave, /reset to start over)",
    [](CLI::App& sub) {
        auto s = std::make_shared<ChatState>();
        s->sampling.temperature = 0.7f;
        s->sampling.top_p = 0.95f;
        s->sampling.min_p = 0.05f;
        add_chat_options(sub, *s);
        return [s]() -> int {
            auto m = tandem::cli::open_model(s->rt, true);
            nlohmann::ordered_json messages = nlohmann::ordered_json::array();
            auto reset = [&] {
                messages = nlohmann::ordered_json::array();
                if (!s->system.empty())
                    messages.push_back({{"role", "system"}, {"content", s->system}});
            };
            reset();
            std::string line;
            for (;;) {
                std::printf("> ");
                std::fflush(stdout);
                if (!std::getline(std::cin, line) || line == "/exit") break;
                if (line == "/reset") {
                    reset();
                    continue;
                }
                if (line.empty()) continue;
                messages.push_back({{"role", "user"}, {"content", line}});
                tandem::cli::recover_cluster(m);  // the heartbeat may have found a dead node
                try {
                    messages.push_back(
                        {{"role", "assistant"}, {"content", reply(m, *s, messages)}});
                } catch (const tandem::Error& e) {
                    // A full context ends the turn, not the session.
                    messages.erase(messages.end() - 1);
                    std::fprintf(stderr, "error: %s\n", e.what());
                    tandem::cli::recover_cluster(m);  // a node failed: re-plan or go local
                }
            }
            return 0;
        };
    });

}  // namespace
