#include "tandem/library/http.h"

#include <cstdlib>

#include "curl_easy.h"
#include "tandem/common/error.h"

namespace tandem::library {

HttpOptions HttpOptions::from_env() {
    HttpOptions o;
    auto env = [](const char* n) -> std::string {
        const char* v = std::getenv(n);
        return v ? v : "";
    };
    if (auto e = env("HF_ENDPOINT"); !e.empty()) o.endpoint = e;
    while (!o.endpoint.empty() && o.endpoint.back() == '/') o.endpoint.pop_back();
    o.token = env("HF_TOKEN");
    if (o.token.empty()) o.token = env("HUGGING_FACE_HUB_TOKEN");
    return o;
}

namespace {
size_t append_body(char* data, size_t size, size_t n, void* out) {
    static_cast<std::string*>(out)->append(data, size * n);
    return size * n;
}
}  // namespace

HttpResponse http_get(const std::string& url, const HttpOptions& options) {
    detail::CurlEasy easy(url, options);
    HttpResponse r;
    easy.capture_headers();
    curl_easy_setopt(easy.get(), CURLOPT_WRITEFUNCTION, &append_body);
    curl_easy_setopt(easy.get(), CURLOPT_WRITEDATA, &r.body);
    curl_easy_setopt(easy.get(), CURLOPT_TIMEOUT, 120L);
    CURLcode rc = curl_easy_perform(easy.get());
    if (rc != CURLE_OK) throw Error("http: GET " + url + " failed: " + easy.error_text(rc));
    r.status = easy.status();
    r.headers = easy.headers();
    r.effective_url = easy.effective_url();
    return r;
}

std::string url_escape(const std::string& s) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
            out.push_back(char(c));
        } else {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 15]);
        }
    }
    return out;
}

}  // namespace tandem::library
