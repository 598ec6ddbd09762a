// An assistant message written while it is generated: saved at the start, committed in bounded
// intervals, finalised at the end or marked interrupted with what was produced.
#include "store/store_impl.h"
#include "tandem/common/error.h"
#include "tandem/common/log.h"

namespace tandem::store {

AssistantStream::AssistantStream(ChatStore* store, int64_t id)
    : store_(store), id_(id), last_flush_(std::chrono::steady_clock::now()) {}

AssistantStream::AssistantStream(AssistantStream&& other) noexcept
    : store_(other.store_),
      id_(other.id_),
      content_(std::move(other.content_)),
      committed_size_(other.committed_size_),
      last_flush_(other.last_flush_) {
    other.store_ = nullptr;
}

AssistantStream::~AssistantStream() {
    if (!store_) return;
    try {
        interrupt();
    } catch (const std::exception& e) {
        log_error(std::string("store: could not save interrupted message ") + std::to_string(id_) +
                  ": " + e.what());
    }
}

bool AssistantStream::append(std::string_view piece) {
    if (!store_) throw Error("store: message " + std::to_string(id_) + " is already finished");
    content_.append(piece);
    auto now = std::chrono::steady_clock::now();
    if (now - last_flush_ < store_->impl().options.stream_flush_interval) return false;
    flush();
    return true;
}

void AssistantStream::flush() {
    if (!store_) throw Error("store: message " + std::to_string(id_) + " is already finished");
    last_flush_ = std::chrono::steady_clock::now();
    if (committed_size_ == content_.size()) return;
    auto& impl = store_->impl();
    std::lock_guard lock(impl.write_mu);
    sql::Db& db = impl.write_db();
    sql::Statement st(db, "UPDATE messages SET content = ?, updated_at = ? WHERE id = ?");
    st.bind(1, content_).bind(2, now_ms()).bind(3, id_).run();
    if (db.changes() == 0)
        throw Error("store: " + db.path() + ": message " + std::to_string(id_) +
                    " no longer exists (its conversation was deleted?)");
    committed_size_ = content_.size();
}

void AssistantStream::finish(const FinishInfo& info) {
    close(MessageStatus::Complete, info);
}

void AssistantStream::interrupt(const std::string& reason) {
    FinishInfo info;
    info.finish_reason = reason;
    close(MessageStatus::Interrupted, info);
}

void AssistantStream::close(MessageStatus status, const FinishInfo& info) {
    if (!store_) throw Error("store: message " + std::to_string(id_) + " is already finished");
    ChatStore* store = store_;
    store_ = nullptr;  // whatever happens below, this stream is over (no second try in ~)
    auto& impl = store->impl();
    std::lock_guard lock(impl.write_mu);
    sql::Db& db = impl.write_db();
    sql::Transaction tx(db);
    int64_t now = now_ms();
    sql::Statement st(db,
                      "UPDATE messages SET content = ?, status = ?, finish_reason = ?, "
                      "prompt_tokens = ?, completion_tokens = ?, tokens_per_second = ?, "
                      "updated_at = ?, finished_at = ? WHERE id = ? RETURNING conversation_id");
    st.bind(1, content_).bind(2, status_name(status)).bind(3, info.finish_reason);
    st.bind(4, info.prompt_tokens).bind(5, info.completion_tokens).bind(6, info.tokens_per_second);
    st.bind(7, now).bind(8, now).bind(9, id_);
    if (!st.step()) {
        // The conversation was deleted while generating: nothing left to save.
        log_warn("store: message " + std::to_string(id_) + " was deleted while generating");
        return;
    }
    int64_t conversation_id = st.int64(0);
    st.run();
    touch_conversation(db, conversation_id, now);
    tx.commit();
    committed_size_ = content_.size();
}

}  // namespace tandem::store
