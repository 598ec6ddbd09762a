#include "tandem/library/hf_client.h"

#include <nlohmann/json.hpp>

#include "tandem/common/error.h"

namespace tandem::library {
namespace {

// Path segments escaped, '/' kept (repo ids and file paths).
std::string escape_path(const std::string& p) {
    std::string out;
    size_t start = 0;
    for (;;) {
        auto slash = p.find('/', start);
        out += url_escape(p.substr(start, slash - start));
        if (slash == std::string::npos) break;
        out += '/';
        start = slash + 1;
    }
    return out;
}

void check_status(const HttpResponse& r, const std::string& what) {
    if (r.status == 200) return;
    std::string why;
    switch (r.status) {
        case 401:
        case 403:
            why = "access denied (gated or private repository: set HF_TOKEN)";
            break;
        case 404:
            why = "not found";
            break;
        case 429:
            why = "rate limited by the hub, try again later";
            break;
        default:
            why = "HTTP " + std::to_string(r.status);
    }
    throw Error("hf: " + what + ": " + why);
}

nlohmann::json parse_json(const HttpResponse& r, const std::string& what) {
    try {
        return nlohmann::json::parse(r.body);
    } catch (const std::exception& e) {
        throw Error("hf: " + what + ": the answer is not JSON (" + e.what() + ")");
    }
}

uint64_t u64_field(const nlohmann::json& j, const char* key) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number_unsigned()) return 0;
    return it->get<uint64_t>();
}

// The URL of rel="next" in a Link header (the hub pages long tree listings).
std::string next_link(const std::map<std::string, std::string>& headers) {
    auto it = headers.find("link");
    if (it == headers.end()) return "";
    const std::string& v = it->second;
    auto rel = v.find("rel=\"next\"");
    if (rel == std::string::npos) return "";
    auto open = v.rfind('<', rel);
    auto close = v.find('>', open);
    if (open == std::string::npos || close == std::string::npos) return "";
    return v.substr(open + 1, close - open - 1);
}

}  // namespace

SearchSort parse_search_sort(const std::string& name) {
    if (name == "downloads") return SearchSort::Downloads;
    if (name == "likes") return SearchSort::Likes;
    if (name == "updated" || name == "lastModified") return SearchSort::Updated;
    throw Error("hf: unknown sort '" + name + "' (use downloads, likes or updated)");
}

std::vector<ModelSummary> HfClient::search(const std::string& query, SearchSort sort, int limit,
                                           bool gguf_only) const {
    const char* sort_key = sort == SearchSort::Downloads ? "downloads"
                           : sort == SearchSort::Likes   ? "likes"
                                                         : "lastModified";
    std::string url = options_.endpoint + "/api/models?search=" + url_escape(query) +
                      "&sort=" + sort_key + "&direction=-1&limit=" + std::to_string(limit);
    if (gguf_only) url += "&filter=gguf";
    // Without expand the hub leaves lastModified out of list answers (repeated key, as
    // huggingface_hub sends it).
    url += "&expand=downloads&expand=likes&expand=lastModified&expand=tags";
    auto r = http_get(url, options_);
    check_status(r, "search '" + query + "'");
    auto j = parse_json(r, "search '" + query + "'");
    if (!j.is_array()) throw Error("hf: search '" + query + "': expected a JSON array");
    std::vector<ModelSummary> out;
    for (const auto& m : j) {
        if (!m.is_object()) continue;
        ModelSummary s;
        if (m.contains("id") && m["id"].is_string()) {
            s.id = m["id"].get<std::string>();
        } else if (m.contains("modelId") && m["modelId"].is_string()) {
            s.id = m["modelId"].get<std::string>();
        } else {
            continue;
        }
        s.downloads = u64_field(m, "downloads");
        s.likes = u64_field(m, "likes");
        if (m.contains("lastModified") && m["lastModified"].is_string())
            s.last_modified = m["lastModified"].get<std::string>();
        if (m.contains("tags") && m["tags"].is_array())
            for (const auto& t : m["tags"])
                if (t.is_string()) s.tags.push_back(t.get<std::string>());
        out.push_back(std::move(s));
    }
    return out;
}

std::vector<RepoFile> HfClient::list_files(const std::string& repo,
                                           const std::string& revision) const {
    std::string what = "file list of " + repo + "@" + revision;
    std::string url = options_.endpoint + "/api/models/" + escape_path(repo) + "/tree/" +
                      url_escape(revision) + "?recursive=1";
    std::vector<RepoFile> out;
    for (int page = 0; !url.empty(); ++page) {
        if (page > 1000) throw Error("hf: " + what + ": too many pages");
        auto r = http_get(url, options_);
        check_status(r, what);
        auto j = parse_json(r, what);
        if (!j.is_array()) throw Error("hf: " + what + ": expected a JSON array");
        for (const auto& e : j) {
            if (!e.is_object() || e.value("type", "") != "file") continue;
            if (!e.contains("path") || !e["path"].is_string())
                throw Error("hf: " + what + ": an entry has no 'path'");
            RepoFile f;
            f.path = e["path"].get<std::string>();
            f.size = u64_field(e, "size");
            if (e.contains("lfs") && e["lfs"].is_object()) {
                const auto& lfs = e["lfs"];
                if (lfs.contains("oid") && lfs["oid"].is_string())
                    f.sha256 = lfs["oid"].get<std::string>();
                if (auto s = u64_field(lfs, "size")) f.size = s;
            }
            out.push_back(std::move(f));
        }
        url = next_link(r.headers);
    }
    return out;
}

std::string HfClient::resolve_url(const std::string& repo, const std::string& revision,
                                  const std::string& path) const {
    return options_.endpoint + "/" + escape_path(repo) + "/resolve/" + url_escape(revision) + "/" +
           escape_path(path);
}

}  // namespace tandem::library
