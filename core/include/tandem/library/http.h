#pragma once
// Settings shared by everything in the library that speaks HTTP (Hugging Face API and file
// downloads), and a plain GET for small JSON answers. libcurl underneath, TLS verification on.
#include <map>
#include <string>
#include <vector>

namespace tandem::library {

struct HttpOptions {
    // Base URL of the hub; HF_ENDPOINT overrides the default (mirrors, tests).
    std::string endpoint = "https://huggingface.co";
    std::string token;       // bearer token (HF_TOKEN); sent only to the endpoint's host
    std::string proxy;       // empty: libcurl's usual http_proxy/https_proxy/no_proxy variables
    std::string ca_bundle;   // extra CA file; empty: the system's
    bool verify_tls = true;  // off only when asked for explicitly
    long connect_timeout_s = 20;
    std::string user_agent = "tandem/0.1";

    // Defaults with HF_ENDPOINT, HF_TOKEN (or HUGGING_FACE_HUB_TOKEN) applied.
    static HttpOptions from_env();
};

struct HttpResponse {
    long status = 0;
    std::string body;
    // Headers of the last response (names lower-case), after redirects.
    std::map<std::string, std::string> headers;
    std::string effective_url;
};

// GET with redirects followed. Transport failures throw tandem::Error naming the URL; HTTP error
// statuses are returned for the caller to explain.
HttpResponse http_get(const std::string& url, const HttpOptions& options);

// "a b/c" -> "a%20b%2Fc" (RFC 3986 unreserved characters kept).
std::string url_escape(const std::string& s);

}  // namespace tandem::library
