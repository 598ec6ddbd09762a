// tandem-cli search: models on the hub (GGUF repositories by default).
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "command.h"
#include "tandem/library/format.h"
#include "tandem/library/hf_client.h"

namespace {

struct SearchOptions {
    std::string query;
    std::string sort = "downloads";
    int limit = 20;
    bool all = false;
    bool json = false;
    std::string endpoint, token, proxy;
};

tandem::cli::Register reg("search", "Search models on Hugging Face", [](CLI::App& sub) {
    auto o = std::make_shared<SearchOptions>();
    sub.add_option("query", o->query, "Words in the model name")->required();
    sub.add_option("--sort", o->sort, "downloads, likes or updated")
        ->check(CLI::IsMember({"downloads", "likes", "updated"}));
    sub.add_option("--limit", o->limit, "Number of results")->check(CLI::Range(1, 1000));
    sub.add_flag("--all", o->all, "Not only GGUF repositories");
    sub.add_flag("--json", o->json, "Machine-readable output");
    sub.add_option("--endpoint", o->endpoint,
                   "Hub base URL (default: $HF_ENDPOINT or huggingface.co)");
    sub.add_option("--token", o->token, "Access token (default: $HF_TOKEN)");
    sub.add_option("--proxy", o->proxy, "Proxy URL (default: the usual *_proxy variables)");
    return [o]() -> int {
        using namespace tandem::library;
        auto http = HttpOptions::from_env();
        if (!o->endpoint.empty()) http.endpoint = o->endpoint;
        if (!o->token.empty()) http.token = o->token;
        if (!o->proxy.empty()) http.proxy = o->proxy;
        HfClient hub(http);
        auto models = hub.search(o->query, parse_search_sort(o->sort), o->limit, !o->all);
        if (o->json) {
            auto j = nlohmann::json::array();
            for (const auto& m : models)
                j.push_back({{"id", m.id},
                             {"downloads", m.downloads},
                             {"likes", m.likes},
                             {"last_modified", m.last_modified}});
            std::printf("%s\n", j.dump(2).c_str());
            return 0;
        }
        if (models.empty()) {
            std::printf("no models found for '%s'\n", o->query.c_str());
            return 0;
        }
        std::printf("%-60s %10s %7s  %s\n", "MODEL", "DOWNLOADS", "LIKES", "UPDATED");
        for (const auto& m : models)
            std::printf("%-60s %10s %7s  %s\n", m.id.c_str(), human_count(m.downloads).c_str(),
                        human_count(m.likes).c_str(), m.last_modified.substr(0, 10).c_str());
        return 0;
    };
});

}  // namespace
