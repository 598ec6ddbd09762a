#include "curl_easy.h"

#include <algorithm>
#include <cctype>
#include <mutex>

#include "tandem/common/error.h"

namespace tandem::library::detail {

void ensure_curl_global_init() {
    static std::once_flag once;
    std::call_once(once, [] {
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
            throw Error("http: libcurl initialisation failed");
    });
}

namespace {
std::string trim(std::string s) {
    auto ws = [](unsigned char c) { return std::isspace(c) != 0; };
    while (!s.empty() && ws(s.back())) s.pop_back();
    size_t i = 0;
    while (i < s.size() && ws(s[i])) ++i;
    return s.substr(i);
}

// The scheme://host[:port] part of a URL, for deciding where the token may go.
std::string origin_of(const std::string& url) {
    auto p = url.find("://");
    if (p == std::string::npos) return url;
    auto slash = url.find('/', p + 3);
    return slash == std::string::npos ? url : url.substr(0, slash);
}
}  // namespace

CurlEasy::CurlEasy(const std::string& url, const HttpOptions& options) {
    ensure_curl_global_init();
    curl_ = curl_easy_init();
    if (!curl_) throw Error("http: cannot create a libcurl handle");
    curl_easy_setopt(curl_, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl_, CURLOPT_ERRORBUFFER, error_buf_);
    curl_easy_setopt(curl_, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl_, CURLOPT_MAXREDIRS, 10L);
    curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl_, CURLOPT_CONNECTTIMEOUT, options.connect_timeout_s);
    curl_easy_setopt(curl_, CURLOPT_USERAGENT, options.user_agent.c_str());
    curl_easy_setopt(curl_, CURLOPT_SSL_VERIFYPEER, options.verify_tls ? 1L : 0L);
    curl_easy_setopt(curl_, CURLOPT_SSL_VERIFYHOST, options.verify_tls ? 2L : 0L);
    curl_easy_setopt(curl_, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl_, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    if (!options.ca_bundle.empty())
        curl_easy_setopt(curl_, CURLOPT_CAINFO, options.ca_bundle.c_str());
    if (!options.proxy.empty()) curl_easy_setopt(curl_, CURLOPT_PROXY, options.proxy.c_str());
    // The token belongs to the hub only: never to a CDN host a redirect leads to (libcurl drops
    // custom Authorization headers on cross-host redirects) nor to an unrelated URL.
    if (!options.token.empty() && origin_of(url) == origin_of(options.endpoint))
        add_header("Authorization: Bearer " + options.token);
}

CurlEasy::~CurlEasy() {
    if (curl_) curl_easy_cleanup(curl_);
    if (header_list_) curl_slist_free_all(header_list_);
}

void CurlEasy::add_header(const std::string& line) {
    header_list_ = curl_slist_append(header_list_, line.c_str());
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, header_list_);
}

void CurlEasy::capture_headers() {
    curl_easy_setopt(curl_, CURLOPT_HEADERFUNCTION, &CurlEasy::on_header);
    curl_easy_setopt(curl_, CURLOPT_HEADERDATA, this);
}

size_t CurlEasy::on_header(char* data, size_t size, size_t n, void* self_ptr) {
    auto* self = static_cast<CurlEasy*>(self_ptr);
    std::string line(data, size * n);
    if (line.rfind("HTTP/", 0) == 0) {
        self->headers_.clear();
        return size * n;
    }
    auto colon = line.find(':');
    if (colon == std::string::npos) return size * n;
    std::string name = line.substr(0, colon);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return char(std::tolower(c)); });
    std::string value = trim(line.substr(colon + 1));
    self->headers_[name] = value;
    if (name.rfind("x-linked-", 0) == 0) self->linked_[name] = value;
    return size * n;
}

long CurlEasy::status() const {
    long code = 0;
    curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &code);
    return code;
}

std::string CurlEasy::effective_url() const {
    char* u = nullptr;
    curl_easy_getinfo(curl_, CURLINFO_EFFECTIVE_URL, &u);
    return u ? u : "";
}

std::string CurlEasy::error_text(CURLcode code) const {
    std::string s = curl_easy_strerror(code);
    if (error_buf_[0]) s += std::string(" (") + error_buf_ + ")";
    return s;
}

}  // namespace tandem::library::detail
