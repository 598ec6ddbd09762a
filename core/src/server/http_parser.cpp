// HTTP/1.1 request parsing with hard limits: a client can make the server hold at most
// max_header_bytes + max_body_bytes for one request, and a bad request gets a 4xx, never a crash.
#include <algorithm>
#include <cctype>
#include <charconv>

#include "tandem/server/http.h"

namespace tandem::server {

namespace {

std::string lower(std::string_view s) {
    std::string r(s);
    for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return r;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

bool fail(ParseFailure& f, int status, std::string message) {
    f.status = status;
    f.message = std::move(message);
    return false;
}

bool is_token_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

}  // namespace

std::string HttpRequest::header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? std::string() : it->second;
}

bool HttpRequest::keep_alive() const {
    const std::string c = lower(header("connection"));
    if (version == "HTTP/1.0") return c == "keep-alive";
    return c != "close";
}

bool read_request(std::string& buffer, const std::function<size_t(std::string&)>& read_more,
                  const HttpLimits& limits, HttpRequest& out, ParseFailure& failure) {
    failure = {};
    size_t end;
    while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
        if (buffer.size() > limits.max_header_bytes)
            return fail(failure, 431,
                        "request headers larger than " + std::to_string(limits.max_header_bytes) +
                            " bytes");
        const size_t before = buffer.size();
        if (read_more(buffer) == 0) {
            // A peer that closes mid-request gets nothing; garbage before close gets a 400.
            if (before == 0) return fail(failure, 0, "connection closed");
            return fail(failure, 400, "incomplete request head");
        }
    }
    if (end > limits.max_header_bytes)
        return fail(
            failure, 431,
            "request headers larger than " + std::to_string(limits.max_header_bytes) + " bytes");
    const std::string_view head(buffer.data(), end);
    size_t line_end = head.find("\r\n");
    std::string_view line = head.substr(0, line_end);
    // Request line: METHOD SP target SP HTTP/1.x
    const size_t sp1 = line.find(' ');
    const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
        line.find(' ', sp2 + 1) != std::string_view::npos)
        return fail(failure, 400, "malformed request line");
    out = {};
    out.method = std::string(line.substr(0, sp1));
    out.target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
    out.version = std::string(line.substr(sp2 + 1));
    if (out.method.empty() || !std::all_of(out.method.begin(), out.method.end(), is_token_char))
        return fail(failure, 400, "malformed method");
    if (out.version != "HTTP/1.1" && out.version != "HTTP/1.0")
        return fail(failure, 505, "unsupported HTTP version '" + out.version + "'");
    if (out.target.empty() || out.target[0] != '/')
        return fail(failure, 400, "request target must be a path");
    out.path = out.target.substr(0, out.target.find('?'));

    size_t pos = line_end == std::string_view::npos ? head.size() : line_end + 2;
    while (pos < head.size()) {
        size_t e = head.find("\r\n", pos);
        if (e == std::string_view::npos) e = head.size();
        std::string_view h = head.substr(pos, e - pos);
        pos = e + 2;
        const size_t colon = h.find(':');
        if (colon == 0 || colon == std::string_view::npos)
            return fail(failure, 400, "malformed header line");
        const std::string_view name = h.substr(0, colon);
        if (!std::all_of(name.begin(), name.end(), is_token_char))
            return fail(failure, 400, "malformed header name");
        if (out.headers.size() >= limits.max_headers)
            return fail(failure, 431,
                        "more than " + std::to_string(limits.max_headers) + " headers");
        std::string key = lower(name);
        std::string value(trim(h.substr(colon + 1)));
        if (key == "content-length" && out.headers.count(key) && out.headers[key] != value)
            return fail(failure, 400, "conflicting Content-Length headers");
        out.headers[key] = std::move(value);
    }
    if (!out.header("transfer-encoding").empty())
        return fail(failure, 501, "chunked request bodies are not supported");

    size_t length = 0;
    if (auto cl = out.header("content-length"); !cl.empty()) {
        auto [p, ec] = std::from_chars(cl.data(), cl.data() + cl.size(), length);
        if (ec != std::errc() || p != cl.data() + cl.size())
            return fail(failure, 400, "bad Content-Length '" + cl + "'");
        if (length > limits.max_body_bytes)
            return fail(failure, 413,
                        "request body of " + cl + " bytes is over the limit of " +
                            std::to_string(limits.max_body_bytes));
    }
    buffer.erase(0, end + 4);
    while (buffer.size() < length)
        if (read_more(buffer) == 0) return fail(failure, 0, "connection closed mid-body");
    out.body = buffer.substr(0, length);
    buffer.erase(0, length);
    return true;
}

const char* status_text(int status) {
    switch (status) {
        case 200:
            return "OK";
        case 204:
            return "No Content";
        case 400:
            return "Bad Request";
        case 401:
            return "Unauthorized";
        case 404:
            return "Not Found";
        case 405:
            return "Method Not Allowed";
        case 408:
            return "Request Timeout";
        case 413:
            return "Payload Too Large";
        case 415:
            return "Unsupported Media Type";
        case 429:
            return "Too Many Requests";
        case 431:
            return "Request Header Fields Too Large";
        case 500:
            return "Internal Server Error";
        case 501:
            return "Not Implemented";
        case 503:
            return "Service Unavailable";
        case 505:
            return "HTTP Version Not Supported";
    }
    return "Unknown";
}

}  // namespace tandem::server
