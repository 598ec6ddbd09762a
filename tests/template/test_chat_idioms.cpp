// Chat-template idioms beyond the fixture set (reasoning content, tool calls and results,
// multimodal content lists, reversed message scans, typed tool schemas), written in the style
// of current model templates and rendered over several conversations each. Python Jinja2 is the
// oracle (jinja2_reference.h), so the templates need not be verbatim copies.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "jinja2_reference.h"

namespace {

using ojson = nlohmann::ordered_json;

// A ChatML template with tools and reasoning in the style of Qwen3.
const char* kQwen3Style = R"JINJA({%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0].role == 'system' %}
        {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.multi_step_tool and message.role == "user" and message.content is string and not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
        {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if message.content is string %}
        {%- set content = message.content %}
    {%- else %}
        {%- set content = '' %}
    {%- endif %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {%- set reasoning_content = '' %}
        {%- if message.reasoning_content is string %}
            {%- set reasoning_content = message.reasoning_content %}
        {%- else %}
            {%- if '</think>' in content %}
                {%- set reasoning_content = content.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') %}
                {%- set content = content.split('</think>')[-1].lstrip('\n') %}
            {%- endif %}
        {%- endif %}
        {%- if loop.index0 > ns.last_query_index %}
            {%- if loop.last or (not loop.last and reasoning_content) %}
                {{- '<|im_start|>' + message.role + '\n<think>\n' + reasoning_content.strip('\n') + '\n</think>\n\n' + content.lstrip('\n') }}
            {%- else %}
                {{- '<|im_start|>' + message.role + '\n' + content }}
            {%- endif %}
        {%- else %}
            {{- '<|im_start|>' + message.role + '\n' + content }}
        {%- endif %}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and content) or (not loop.first) %}
                    {{- '\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' }}
                {{- tool_call.name }}
                {{- '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %})JINJA";

// Multimodal content lists and a system message folded into the first user turn (Gemma 3 style).
const char* kGemma3Style = R"JINJA({{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '

' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '

' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '
' + (first_user_prefix if loop.first else "") }}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {{ '<end_of_turn>
' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model
'}}
{%- endif -%}
)JINJA";

// Many namespace flags, `is none` checks and nested tool-call loops (DeepSeek V3 style).
const char* kDeepSeekStyle =
    R"JINJA({% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}{% set ns = namespace(is_first=false, is_tool=false, is_output_first=true, system_prompt='', is_first_sp=true) %}{%- for message in messages %}{%- if message['role'] == 'system' %}{%- if ns.is_first_sp %}{% set ns.system_prompt = ns.system_prompt + message['content'] %}{% set ns.is_first_sp = false %}{%- else %}{% set ns.system_prompt = ns.system_prompt + '\n\n' + message['content'] %}{%- endif %}{%- endif %}{%- endfor %}{{ bos_token }}{{ ns.system_prompt }}{%- for message in messages %}{%- if message['role'] == 'user' %}{%- set ns.is_tool = false -%}{{'<｜User｜>' + message['content']}}{%- endif %}{%- if message['role'] == 'assistant' and 'tool_calls' in message %}{%- set ns.is_tool = false -%}{%- for tool in message['tool_calls'] %}{%- if not ns.is_first %}{%- if message['content'] is none %}{{'<｜Assistant｜><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\n' + '```json' + '\n' + tool['function']['arguments']|tojson + '\n' + '```' + '<｜tool▁call▁end｜>'}}{%- else %}{{'<｜Assistant｜>' + message['content'] + '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\n' + '```json' + '\n' + tool['function']['arguments']|tojson + '\n' + '```' + '<｜tool▁call▁end｜>'}}{%- endif %}{%- set ns.is_first = true -%}{%- else %}{{'\n' + '<｜tool▁call▁begin｜>' + tool['type'] + '<｜tool▁sep｜>' + tool['function']['name'] + '\n' + '```json' + '\n' + tool['function']['arguments']|tojson + '\n' + '```' + '<｜tool▁call▁end｜>'}}{%- endif %}{%- endfor %}{{'<｜tool▁calls▁end｜><｜end▁of▁sentence｜>'}}{%- endif %}{%- if message['role'] == 'assistant' and 'tool_calls' not in message %}{%- if ns.is_tool %}{{'<｜tool▁outputs▁end｜>' + message['content'] + '<｜end▁of▁sentence｜>'}}{%- set ns.is_tool = false -%}{%- else %}{% set content = message['content'] %}{% if '</think>' in content %}{% set content = content.split('</think>')[-1] %}{% endif %}{{'<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>'}}{%- endif %}{%- endif %}{%- if message['role'] == 'tool' %}{%- set ns.is_tool = true -%}{%- if ns.is_output_first %}{{'<｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>' + message['content'] + '<｜tool▁output▁end｜>'}}{%- set ns.is_output_first = false %}{%- else %}{{'<｜tool▁output▁begin｜>' + message['content'] + '<｜tool▁output▁end｜>'}}{%- endif %}{%- endif %}{%- endfor -%}{% if ns.is_tool %}{{'<｜tool▁outputs▁end｜>'}}{% endif %}{% if add_generation_prompt and not ns.is_tool %}{{'<｜Assistant｜><think>\n'}}{% endif %})JINJA";

// A recursive macro turning JSON-schema tool parameters into TypeScript-like declarations
// (the gpt-oss / functionary approach): macros with defaults, `is defined`, join, nested calls.
const char* kSchemaMacros =
    R"JINJA({%- macro render_type(spec, required_params, is_nullable=false) -%}
    {%- if spec.type == "array" -%}
        {%- if spec['items'] -%}
            {%- if spec['items']['type'] == "string" -%}string[]
            {%- elif spec['items']['type'] in ["number", "integer"] -%}number[]
            {%- elif spec['items']['type'] == "boolean" -%}boolean[]
            {%- else -%}{{ render_type(spec['items'], required_params) }}[]
            {%- endif -%}
        {%- else -%}any[]
        {%- endif -%}
        {%- if spec.nullable -%} | null{%- endif -%}
    {%- elif spec.type is defined and spec.type is iterable and spec.type is not string -%}
        {%- for t in spec.type -%}{{ render_type({"type": t}, required_params) }}{%- if not loop.last -%} | {% endif -%}{%- endfor -%}
    {%- elif spec.enum is defined -%}
        {%- for v in spec.enum -%}"{{ v }}"{%- if not loop.last -%} | {% endif -%}{%- endfor -%}
    {%- elif spec.type == "object" -%}
        {%- if spec.properties -%}
{
            {%- for name, prop in spec.properties.items() %}
    {{ name }}{%- if name not in (spec.required or []) -%}?{%- endif -%}: {{ render_type(prop, spec.required or []) }}{% if not loop.last %},{% endif %}
            {%- endfor %}
}
        {%- else -%}object
        {%- endif -%}
    {%- elif spec.type in ["integer", "number"] -%}number
    {%- elif spec.type == "string" -%}string
    {%- elif spec.type == "boolean" -%}boolean
    {%- else -%}any
    {%- endif -%}
{%- endmacro -%}
namespace functions {
{% for tool in tools -%}
{%- set f = tool.function if tool.function is defined else tool -%}
// {{ f.description | default('No description', true) | replace('\n', '\n// ') }}
type {{ f.name }} = (_: {{ render_type(f.parameters, f.parameters.required or []) }}) => any;
{% endfor -%}
} // namespace functions)JINJA";

ojson conversations() {
    return ojson::parse(R"JSON([
      {"messages": [{"role": "user", "content": "Hello"}], "add_generation_prompt": true, "bos_token": "<s>"},
      {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"},
                    {"role": "assistant", "content": "<think>\nlet me think\n</think>\n\nHello!"},
                    {"role": "user", "content": "Again"}], "add_generation_prompt": true, "bos_token": "<s>",
       "enable_thinking": false},
      {"messages": [{"role": "user", "content": "Weather in Paris?"},
                    {"role": "assistant", "content": null, "reasoning_content": "need tool",
                     "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "°C"}}},
                                    {"type": "function", "function": {"name": "get_time", "arguments": "{\"tz\": \"CET\"}"}}]},
                    {"role": "tool", "content": "{\"temp\": 21}"}, {"role": "tool", "content": "14:00"},
                    {"role": "assistant", "content": "21 °C at 14:00."}],
       "add_generation_prompt": false, "bos_token": "<s>",
       "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Current weather.\nMetric.",
                  "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City"},
                                 "unit": {"type": "string", "enum": ["°C", "°F"]}, "days": {"type": ["integer", "null"]},
                                 "tags": {"type": "array", "items": {"type": "string"}, "nullable": true},
                                 "opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}, "required": ["deep"]}},
                                 "required": ["city"]}}},
                 {"type": "function", "function": {"name": "get_time", "description": "",
                  "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}}}}]},
      {"messages": [{"role": "system", "content": [{"type": "text", "text": "Sys as list"}]},
                    {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "  What is this?  "}]},
                    {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]}],
       "add_generation_prompt": true, "bos_token": "<bos>"},
      {"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], "bos_token": "<s>"},
      {"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": 42}], "bos_token": "<s>"}
    ])JSON");
}

TEST(ChatIdioms, ModernTemplateStylesMatchJinja2) {
    std::vector<tandem::test::JinjaCase> cases;
    for (const char* tmpl : {kQwen3Style, kGemma3Style, kDeepSeekStyle})
        for (const auto& ctx : conversations()) cases.push_back({tmpl, ctx});
    for (const auto& ctx : conversations())
        if (ctx.contains("tools")) cases.push_back({kSchemaMacros, ctx});
    auto r = tandem::test::compare_with_jinja2(cases);
    if (r.skipped)
        GTEST_SKIP() << "Python with jinja2 not found (packaging/install-deps.sh makes it)";
    EXPECT_GE(r.outputs, 12);
    EXPECT_GE(r.errors, 2);  // Gemma-style alternation check, content of a bad type
}

}  // namespace
