#pragma once
// Records of the conversation store. Times are milliseconds since the Unix epoch (UTC).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tandem::store {

enum class Role { System, User, Assistant, Tool };
// Streaming: an assistant message being generated now (or by a process that died; see
// ChatStore::recover_interrupted). Interrupted: generation stopped early; content is what was made.
enum class MessageStatus { Complete, Streaming, Interrupted };

const char* role_name(Role r);             // "system", "user", "assistant", "tool"
Role parse_role(std::string_view name);    // throws tandem::Error on an unknown name
const char* status_name(MessageStatus s);  // "complete", "streaming", "interrupted"
MessageStatus parse_status(std::string_view name);

struct NewConversation {
    std::string title;
    std::string model;
    std::string system_prompt;
    nlohmann::json sampling = nlohmann::json::object();  // temperature, top_p, ... (an object)
};

struct Conversation {
    int64_t id = 0;
    std::string title;
    int64_t created_at_ms = 0;
    int64_t updated_at_ms = 0;
    std::string model;
    std::string system_prompt;
    nlohmann::json sampling = nlohmann::json::object();
    bool pinned = false;
    bool archived = false;
    int64_t message_count = 0;  // all branches
};

struct Message {
    int64_t id = 0;
    int64_t conversation_id = 0;
    std::optional<int64_t> parent_id;  // nullopt: a first message (a root of the tree)
    Role role = Role::User;
    std::string content;
    MessageStatus status = MessageStatus::Complete;
    int64_t created_at_ms = 0;
    int64_t updated_at_ms = 0;
    std::optional<int64_t> finished_at_ms;
    std::string model;  // the model that wrote it (assistant messages)
    std::optional<int64_t> prompt_tokens;
    std::optional<int64_t> completion_tokens;
    std::optional<double> tokens_per_second;
    std::string finish_reason;  // "stop", "length", "interrupted", "error: ..."; "" while open
    // Position among the messages sharing this parent (the UI's "< 2 / 3 >"), by creation order.
    int sibling_index = 0;
    int sibling_count = 1;
};

// What the generator reports when an assistant message ends.
struct FinishInfo {
    std::string finish_reason = "stop";
    std::optional<int64_t> prompt_tokens;
    std::optional<int64_t> completion_tokens;
    std::optional<double> tokens_per_second;
};

struct SearchHit {
    int64_t conversation_id = 0;
    std::string conversation_title;
    int64_t message_id = 0;
    Role role = Role::User;
    std::string snippet;  // matches wrapped in the markers given to search()
    double score = 0;     // FTS5 bm25: lower is better; hits come sorted best first
};

}  // namespace tandem::store
