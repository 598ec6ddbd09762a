#pragma once
// The conversation store: one SQLite database (WAL, foreign keys, versioned schema) holding every
// conversation as a tree of messages. Edits and regenerations add siblings; each message remembers
// its selected child, so the "active path" is the chain of selected children from the selected
// root and switching a branch is one update. Schema: docs/store.md.
//
// Thread safety: every method may be called from any thread. Writes go through one connection
// (serialised), reads through another, so in WAL mode a reader never waits for a generation that
// is writing. Other processes (tandem-cli) may use the file at the same time; busy waits are
// bounded by Options::busy_timeout_ms. The calls do disk I/O: a UI calls them off its UI thread.
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tandem/store/types.h"

namespace tandem::store {

inline constexpr int kSchemaVersion = 2;
// PRAGMA application_id of a Tandem database: 'TAND'.
inline constexpr int32_t kApplicationId = 0x54414E44;

class AssistantStream;

class ChatStore {
  public:
    struct Options {
        bool read_only = false;      // never writes; an older schema is then an error, not migrated
        int busy_timeout_ms = 5000;  // how long a call waits for another writer before failing
        // AssistantStream commits its text at most this often (and at finish/interruption).
        std::chrono::milliseconds stream_flush_interval{250};
    };

    // Opens or creates the database. Before any write the file is inspected read-only; a file
    // that is not SQLite, a SQLite database of another application, or one from a newer Tandem
    // gives tandem::Error and stays byte-for-byte untouched. An older schema is migrated in one
    // transaction (all or nothing).
    static std::unique_ptr<ChatStore> open(const std::filesystem::path& path, Options options);
    static std::unique_ptr<ChatStore> open(const std::filesystem::path& path) {
        return open(path, Options{});
    }
    // $TANDEM_CHATS_DB, else $TANDEM_HOME/chats.db, else $XDG_DATA_HOME/tandem/chats.db, else
    // ~/.local/share/tandem/chats.db.
    static std::filesystem::path default_path();

    ~ChatStore();
    ChatStore(const ChatStore&) = delete;
    ChatStore& operator=(const ChatStore&) = delete;

    const std::filesystem::path& path() const { return path_; }

    // --- conversations ---
    int64_t create_conversation(const NewConversation& c);
    void rename_conversation(int64_t id, const std::string& title);
    void set_archived(int64_t id, bool archived);
    void set_pinned(int64_t id, bool pinned);
    void set_model(int64_t id, const std::string& model);
    void set_system_prompt(int64_t id, const std::string& prompt);
    void set_sampling(int64_t id, const nlohmann::json& sampling);
    // Removes the conversation and all of its messages.
    void delete_conversation(int64_t id);
    // Throws tandem::Error for an unknown id.
    Conversation conversation(int64_t id);
    // Pinned first, then most recently updated. Archived ones only when asked.
    std::vector<Conversation> list_conversations(bool include_archived = false);

    // --- messages ---
    // Appends to the end of the active path and selects the new message.
    int64_t append_message(int64_t conversation_id, Role role, const std::string& content);
    int64_t append_user_message(int64_t conversation_id, const std::string& content) {
        return append_message(conversation_id, Role::User, content);
    }
    // Starts an assistant message (status Streaming, saved at once) as a child of `parent_id`
    // (default: the end of the active path) and selects it and its ancestors. Giving the parent
    // of an existing reply regenerates it: the new message becomes a sibling branch.
    AssistantStream begin_assistant_message(int64_t conversation_id, const std::string& model,
                                            std::optional<int64_t> parent_id = std::nullopt);
    // An edit: a new sibling of `message_id` (same parent and role) with `content`, selected
    // (with its ancestors); the old branch stays reachable. Returns the new id.
    int64_t edit_message(int64_t message_id, const std::string& content);
    // Makes `message_id` the selected child of its parent (or the selected root).
    void select_branch(int64_t message_id);
    // Throws tandem::Error for an unknown id.
    Message message(int64_t id);
    // The chain of selected children from the selected root to a leaf.
    std::vector<Message> active_path(int64_t conversation_id);
    // Messages sharing the parent of `message_id` (itself included), oldest first.
    std::vector<Message> siblings(int64_t message_id);
    // Every message of the conversation, all branches, parents before children (by id).
    std::vector<Message> all_messages(int64_t conversation_id);
    // Marks messages left Streaming by a process that died as Interrupted. Call it where no
    // generation of this database can be running (application start); returns how many.
    int recover_interrupted();

    // --- search ---
    // Full-text search over every message (FTS5, unicode61 tokens, diacritics folded). Words of
    // `query` must all occur; a trailing '*' on a word matches a prefix. Best matches first.
    std::vector<SearchHit> search(const std::string& query, int limit = 50,
                                  const std::string& mark_open = "[",
                                  const std::string& mark_close = "]");

    // The database file's integrity (PRAGMA integrity_check): "ok" or SQLite's findings.
    std::string integrity_check();

    struct Impl;  // the connections (core/src/store/store_impl.h)
    Impl& impl() { return *impl_; }

  private:
    ChatStore(std::filesystem::path path, std::unique_ptr<Impl> impl);
    std::filesystem::path path_;
    std::unique_ptr<Impl> impl_;
};

// One assistant message being generated. Text accumulates in memory and is committed at most
// every Options::stream_flush_interval, on flush() and at finish(). Destroyed without finish()
// (an exception, a cancelled generation) it commits what was produced, marked Interrupted.
// Use it from one thread at a time; the store it came from must outlive it.
class AssistantStream {
  public:
    AssistantStream(AssistantStream&& other) noexcept;
    AssistantStream& operator=(AssistantStream&&) = delete;
    AssistantStream(const AssistantStream&) = delete;
    ~AssistantStream();

    int64_t id() const { return id_; }
    const std::string& content() const { return content_; }
    // Adds generated text; commits when the flush interval has passed. Returns true if committed.
    bool append(std::string_view piece);
    // Commits the text so far now.
    void flush();
    void finish(const FinishInfo& info = {});
    // Stops early: commits the text so far with status Interrupted.
    void interrupt(const std::string& reason = "interrupted");
    bool open() const { return store_ != nullptr; }

  private:
    friend class ChatStore;
    AssistantStream(ChatStore* store, int64_t id);
    void close(MessageStatus status, const FinishInfo& info);

    ChatStore* store_ = nullptr;
    int64_t id_ = 0;
    std::string content_;
    size_t committed_size_ = 0;
    std::chrono::steady_clock::time_point last_flush_;
};

}  // namespace tandem::store
