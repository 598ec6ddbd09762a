// HfClient against the local hub stand-in: search parameters and ordering, the repo tree with
// LFS sha256 (computed by Python's hashlib), pagination, gated repos, missing repos.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "fixtures.h"
#include "tandem/common/error.h"
#include "tandem/library/hf_client.h"
#include "tandem/library/sha256.h"
#include "test_hub.h"

using namespace tandem::library;
using tandem::test::TestHub;

namespace {

class HfClientTest : public ::testing::Test {
  protected:
    void SetUp() override {
        root_ = tandem::test::temp_dir("hub");
        nlohmann::json models = nlohmann::json::array({
            {{"id", "bartowski/Llama-3.2-1B-Instruct-GGUF"},
             {"downloads", 500},
             {"likes", 10},
             {"lastModified", "2025-01-01T00:00:00.000Z"},
             {"tags", {"gguf", "llama"}}},
            {{"id", "unsloth/Llama-3.2-3B-GGUF"},
             {"downloads", 300},
             {"likes", 90},
             {"lastModified", "2025-03-01T00:00:00.000Z"},
             {"tags", {"gguf"}}},
            {{"id", "meta-llama/Llama-3.2-1B"},
             {"downloads", 9000},
             {"likes", 900},
             {"tags", {"safetensors"}}},
            {{"id", "Qwen/Qwen2.5-7B-Instruct-GGUF"},
             {"downloads", 800},
             {"likes", 50},
             {"tags", {"gguf"}}},
        });
        std::ofstream(root_ / "_models.json") << models.dump();
        hub_ = std::make_unique<TestHub>(root_);
    }
    std::filesystem::path root_;
    std::unique_ptr<TestHub> hub_;
};

TEST_F(HfClientTest, SearchSendsFilterSortAndLimitAndParsesModels) {
    HfClient client(hub_->http());
    auto by_likes = client.search("llama", SearchSort::Likes, 5);
    ASSERT_EQ(by_likes.size(), 2u);  // the safetensors-only repo is filtered out
    EXPECT_EQ(by_likes[0].id, "unsloth/Llama-3.2-3B-GGUF");
    EXPECT_EQ(by_likes[0].likes, 90u);
    EXPECT_EQ(by_likes[1].downloads, 500u);
    EXPECT_EQ(by_likes[1].last_modified, "2025-01-01T00:00:00.000Z");

    auto all = client.search("", SearchSort::Downloads, 2, /*gguf_only=*/false);
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].id, "meta-llama/Llama-3.2-1B");
    EXPECT_EQ(all[1].id, "Qwen/Qwen2.5-7B-Instruct-GGUF");

    auto stats = nlohmann::json::parse(hub_->control("stats"));
    std::vector<std::string> queries;
    for (const auto& r : stats["stats"]["requests"])
        if (r["path"] == "/api/models") queries.push_back(r["query"]);
    ASSERT_EQ(queries.size(), 2u);
    EXPECT_EQ(queries[0],
              "search=llama&sort=likes&direction=-1&limit=5&filter=gguf&expand=downloads&"
              "expand=likes&expand=lastModified&expand=tags");
    EXPECT_EQ(queries[1].find("filter="), std::string::npos);
    EXPECT_THROW(parse_search_sort("stars"), tandem::Error);
}

TEST_F(HfClientTest, TreeListsFilesWithSizesAndLfsSha256) {
    auto big = hub_->make_file("org/repo-GGUF", "model-Q4_K_M.gguf", 70000, 1);
    hub_->make_file("org/repo-GGUF", "sub/model-Q8_0.gguf", 5000, 2);
    hub_->make_file("org/repo-GGUF", "README.md", 100, 3);
    HfClient client(hub_->http());
    auto files = client.list_files("org/repo-GGUF", "main");
    ASSERT_EQ(files.size(), 3u);
    std::map<std::string, RepoFile> by_path;
    for (auto& f : files) by_path[f.path] = f;
    ASSERT_TRUE(by_path.count("model-Q4_K_M.gguf"));
    ASSERT_TRUE(by_path.count("sub/model-Q8_0.gguf"));
    EXPECT_EQ(by_path["model-Q4_K_M.gguf"].size, 70000u);
    // The hub's sha256 (hashlib) and ours (OpenSSL) of the same bytes.
    EXPECT_EQ(by_path["model-Q4_K_M.gguf"].sha256, sha256_file(big));
    EXPECT_EQ(by_path["model-Q4_K_M.gguf"].sha256.size(), 64u);
    EXPECT_EQ(by_path["README.md"].sha256, "");  // small files are not LFS
    EXPECT_EQ(client.resolve_url("org/repo-GGUF", "main", "sub/model-Q8_0.gguf"),
              hub_->url() + "/org/repo-GGUF/resolve/main/sub/model-Q8_0.gguf");
}

TEST_F(HfClientTest, TreeFollowsPagination) {
    for (int i = 0; i < 5; ++i)
        hub_->make_file("org/many", "f" + std::to_string(i) + ".gguf", 2000, uint32_t(i));
    hub_->control("page_size", "n=2");
    HfClient client(hub_->http());
    auto files = client.list_files("org/many");
    EXPECT_EQ(files.size(), 5u);
}

TEST_F(HfClientTest, GatedRepoNeedsTokenAndMissingRepoIsNamed) {
    hub_->make_file("org/gated", "m-Q4_0.gguf", 3000, 4);
    std::ofstream(root_ / "org/gated/.gated") << "";
    auto opts = hub_->http();
    try {
        HfClient(opts).list_files("org/gated");
        FAIL() << "expected access denied";
    } catch (const tandem::Error& e) {
        EXPECT_NE(std::string(e.what()).find("access denied"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("org/gated"), std::string::npos) << e.what();
    }
    opts.token = "secret-token";
    EXPECT_EQ(HfClient(opts).list_files("org/gated").size(), 1u);
    try {
        HfClient(opts).list_files("org/nothing");
        FAIL() << "expected not found";
    } catch (const tandem::Error& e) {
        EXPECT_NE(std::string(e.what()).find("not found"), std::string::npos) << e.what();
    }
}

TEST_F(HfClientTest, RequestsGoThroughTheConfiguredProxy) {
    hub_->make_file("org/proxied", "p-Q4_0.gguf", 3000, 5);
    auto opts = hub_->http();
    // A host that does not resolve: only the proxy (the hub, which accepts absolute-URI
    // requests) can answer.
    opts.endpoint = "http://models.invalid";
    opts.proxy = hub_->url();
    auto files = HfClient(opts).list_files("org/proxied");
    ASSERT_EQ(files.size(), 1u);
    EXPECT_EQ(files[0].size, 3000u);
    opts.proxy.clear();
    EXPECT_THROW(HfClient(opts).list_files("org/proxied"), tandem::Error);
}

TEST_F(HfClientTest, TokenGoesToTheHubOnly) {
    hub_->make_file("org/gated", "g-Q4_0.gguf", 3000, 6);
    std::ofstream(root_ / "org/gated/.gated") << "";
    auto opts = hub_->http();
    opts.token = "secret-token";
    HfClient(opts).list_files("org/gated");
    // The same server under another name is another origin: no token for it.
    auto other = opts;
    other.endpoint = "http://localhost:" + std::to_string(hub_->port());
    hub_->reset();
    auto r = http_get(hub_->url() + "/api/models/org/gated/tree/main", other);
    EXPECT_EQ(r.status, 401);
    r = http_get(hub_->url() + "/api/models/org/gated/tree/main", opts);
    EXPECT_EQ(r.status, 200);
    auto stats = nlohmann::json::parse(hub_->control("stats"));
    ASSERT_GE(stats["stats"]["requests"].size(), 2u);
    EXPECT_EQ(stats["stats"]["requests"][0]["auth"], "");
    EXPECT_EQ(stats["stats"]["requests"][1]["auth"], "Bearer secret-token");
}

TEST(HttpOptions, EnvironmentOverridesEndpointAndToken) {
    setenv("HF_ENDPOINT", "http://mirror.example/", 1);
    setenv("HF_TOKEN", "tok", 1);
    auto o = HttpOptions::from_env();
    EXPECT_EQ(o.endpoint, "http://mirror.example");
    EXPECT_EQ(o.token, "tok");
    EXPECT_TRUE(o.verify_tls);
    unsetenv("HF_ENDPOINT");
    unsetenv("HF_TOKEN");
    EXPECT_EQ(HttpOptions::from_env().endpoint, "https://huggingface.co");
}

}  // namespace
