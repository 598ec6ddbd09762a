// Request parsing against hand-written HTTP/1.1 messages (RFC 9112 framing), limits included.
#include <gtest/gtest.h>

#include "tandem/server/http.h"

using namespace tandem::server;

namespace {

// Feeds `wire` to the parser in pieces of `step` bytes, as a socket might.
struct Feed {
    std::string wire;
    size_t step, pos = 0;
    size_t operator()(std::string& buf) {
        if (pos >= wire.size()) return 0;
        const size_t n = std::min(step, wire.size() - pos);
        buf.append(wire, pos, n);
        pos += n;
        return n;
    }
};

bool parse(const std::string& wire, HttpRequest& req, ParseFailure& f, HttpLimits lim = {},
           size_t step = 7) {
    std::string buf;
    Feed feed{wire, step};
    return read_request(buf, std::ref(feed), lim, req, f);
}

}  // namespace

TEST(HttpParser, RequestWithBodyInSmallPieces) {
    HttpRequest r;
    ParseFailure f;
    ASSERT_TRUE(
        parse("POST /v1/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Type:  "
              "application/json \r\nContent-Length: 5\r\n\r\nhello",
              r, f, {}, 3));
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.path, "/v1/completions");
    EXPECT_EQ(r.target, "/v1/completions?x=1");
    EXPECT_EQ(r.header("content-type"), "application/json");
    EXPECT_EQ(r.body, "hello");
    EXPECT_TRUE(r.keep_alive());
}

TEST(HttpParser, PipelinedRequestsStayInTheBuffer) {
    std::string wire =
        "GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /c "
        "HTTP/1.0\r\n\r\n";
    std::string buf = wire;
    auto none = [](std::string&) -> size_t { return 0; };
    HttpRequest r;
    ParseFailure f;
    ASSERT_TRUE(read_request(buf, none, {}, r, f));
    EXPECT_EQ(r.path, "/a");
    ASSERT_TRUE(read_request(buf, none, {}, r, f));
    EXPECT_EQ(r.path, "/b");
    EXPECT_TRUE(r.keep_alive());
    ASSERT_TRUE(read_request(buf, none, {}, r, f));
    EXPECT_EQ(r.path, "/c");
    EXPECT_FALSE(r.keep_alive());  // HTTP/1.0 closes unless asked
    EXPECT_FALSE(read_request(buf, none, {}, r, f));
    EXPECT_EQ(f.status, 0);  // clean end of the connection
}

TEST(HttpParser, LimitsAndMalformedInputGiveTheRightStatus) {
    HttpLimits lim;
    lim.max_header_bytes = 256;
    lim.max_body_bytes = 10;
    lim.max_headers = 3;
    struct Case {
        std::string wire;
        int status;
    } cases[] = {
        {"GET / HTTP/1.1\r\nX: " + std::string(400, 'a') + "\r\n\r\n", 431},
        {"GET / HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", 431},
        {"POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\nhello world", 413},
        {"POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400},
        {"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400},
        {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 501},
        {"GET / HTTP/2.0\r\n\r\n", 505},
        {"GET  / HTTP/1.1\r\n\r\n", 400},
        {"GET http://x/ HTTP/1.1\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\nno colon here\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n", 400},
        {"G(T / HTTP/1.1\r\n\r\n", 400},
        {"GET / HTTP/1.1\r\nHost: x\r\n", 400},  // closed before the blank line
    };
    for (const auto& c : cases) {
        HttpRequest r;
        ParseFailure f;
        EXPECT_FALSE(parse(c.wire, r, f, lim)) << c.wire;
        EXPECT_EQ(f.status, c.status) << c.wire << " -> " << f.message;
        EXPECT_FALSE(f.message.empty());
    }
}

TEST(HttpParser, BodyCutShortIsNotARequest) {
    HttpRequest r;
    ParseFailure f;
    EXPECT_FALSE(parse("POST / HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc", r, f));
    EXPECT_EQ(f.status, 0);
}
