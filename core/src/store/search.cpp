// Full-text search over all messages through the FTS5 index kept by triggers (schema v2).
#include <sstream>

#include "store/store_impl.h"

namespace tandem::store {
namespace {

// User text to an FTS5 query: each word a quoted string (so punctuation and FTS operators in
// the text are plain characters), all required; "word*" keeps its prefix meaning.
std::string fts_query(const std::string& text) {
    std::istringstream in(text);
    std::string word, out;
    while (in >> word) {
        bool prefix = word.size() > 1 && word.back() == '*';
        if (prefix) word.pop_back();
        std::string quoted = "\"";
        for (char c : word) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
        quoted += "\"";
        if (prefix) quoted += "*";
        out += (out.empty() ? "" : " ") + quoted;
    }
    return out;
}

}  // namespace

std::vector<SearchHit> ChatStore::search(const std::string& query, int limit,
                                         const std::string& mark_open,
                                         const std::string& mark_close) {
    std::vector<SearchHit> hits;
    std::string q = fts_query(query);
    if (q.empty() || limit <= 0) return hits;
    std::lock_guard lock(impl_->read_mu);
    sql::Statement st(*impl_->reader,
                      "SELECT m.conversation_id, c.title, m.id, m.role, "
                      "  snippet(messages_fts, 0, ?2, ?3, '…', 16), bm25(messages_fts) AS score "
                      "FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid "
                      "JOIN conversations c ON c.id = m.conversation_id "
                      "WHERE messages_fts MATCH ?1 ORDER BY score, m.id DESC LIMIT ?4");
    st.bind(1, q).bind(2, mark_open).bind(3, mark_close).bind(4, int64_t(limit));
    while (st.step()) {
        SearchHit h;
        h.conversation_id = st.int64(0);
        h.conversation_title = st.text(1);
        h.message_id = st.int64(2);
        h.role = parse_role(st.text(3));
        h.snippet = st.text(4);
        h.score = st.real(5);
        hits.push_back(std::move(h));
    }
    return hits;
}

}  // namespace tandem::store
