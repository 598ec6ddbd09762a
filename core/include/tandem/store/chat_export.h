#pragma once
// Exporting conversations (JSON with every branch and all metadata; Markdown of the active path
// for people) and importing the JSON back. JSON layout: docs/store.md ("tandem-chats" format).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "tandem/store/chat_store.h"

namespace tandem::store {

inline constexpr const char* kExportFormat = "tandem-chats";
inline constexpr int kExportVersion = 1;

// {"format": "tandem-chats", "version": 1, "conversations": [ ... ]}
nlohmann::json export_json(ChatStore& store, const std::vector<int64_t>& conversation_ids);
// Every conversation, archived ones included.
nlohmann::json export_all_json(ChatStore& store);

// The active path as Markdown: a title, the settings, then one section per message.
std::string export_markdown(ChatStore& store, int64_t conversation_id);

// Adds the conversations of an export as new conversations (ids are assigned anew; the tree,
// the selected branches, times and metadata are kept). All or nothing: a malformed document
// gives tandem::Error naming the field ("conversations[2].messages[5].parent_id: ...") and
// nothing is added. Returns the new conversation ids in document order.
std::vector<int64_t> import_json(ChatStore& store, const nlohmann::json& doc);

}  // namespace tandem::store
