#pragma once
// RAII for one libcurl easy handle set up from HttpOptions (internal to the library module).
#include <curl/curl.h>

#include <map>
#include <string>

#include "tandem/library/http.h"

namespace tandem::library::detail {

void ensure_curl_global_init();

class CurlEasy {
  public:
    CurlEasy(const std::string& url, const HttpOptions& options);
    ~CurlEasy();
    CurlEasy(const CurlEasy&) = delete;
    CurlEasy& operator=(const CurlEasy&) = delete;

    CURL* get() const { return curl_; }
    void add_header(const std::string& line);
    // Collects response headers into headers() (lower-case names); a new status line (next
    // redirect hop) clears them, but X-Linked-* headers of any hop are kept in linked().
    void capture_headers();
    const std::map<std::string, std::string>& headers() const { return headers_; }
    const std::map<std::string, std::string>& linked() const { return linked_; }
    long status() const;
    std::string effective_url() const;
    std::string error_text(CURLcode code) const;  // curl's message plus the detail buffer

  private:
    static size_t on_header(char* data, size_t size, size_t n, void* self);
    CURL* curl_ = nullptr;
    curl_slist* header_list_ = nullptr;
    std::map<std::string, std::string> headers_;
    std::map<std::string, std::string> linked_;
    char error_buf_[CURL_ERROR_SIZE] = {};
};

}  // namespace tandem::library::detail
