// The catalog: model facts read from GGUF files written by the PyPI gguf package (its reader is
// the reference), SQLite persistence checked by Python's sqlite3, folder import, bad files.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fixtures.h"
#include "gguf_maker.h"
#include "tandem/common/error.h"
#include "tandem/library/catalog.h"
#include "tandem/library/paths.h"

using namespace tandem::library;
namespace fs = std::filesystem;

namespace {

std::string run(const std::string& cmd) {
    FILE* p = ::popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    size_t n;
    while (p && (n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    if (p) ::pclose(p);
    return out;
}

void write_bytes(const fs::path& p, const std::string& bytes) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << bytes;
}

}  // namespace

TEST(Catalog, InspectAgreesWithTheGgufPackage) {
    auto dir = tandem::test::temp_dir("inspect");
    TANDEM_GGUF_OR_SKIP(made, dir / "Tiny-Q8_0.gguf", "--name TinyLlama --ctx 8192 --file-type 7");
    auto rec = inspect_gguf(made.parts);
    EXPECT_EQ(rec.name, "TinyLlama");
    EXPECT_EQ(rec.architecture, "llama");
    EXPECT_EQ(rec.context_length, 8192u);
    EXPECT_EQ(rec.quant, "Q8_0");
    EXPECT_EQ(rec.parameters, made.parameters);
    EXPECT_EQ(rec.quant_mix, made.quant_mix);
    EXPECT_EQ(rec.size_bytes, made.total_size);
    ASSERT_EQ(rec.files.size(), 1u);
    EXPECT_EQ(rec.files[0].size, made.total_size);
}

TEST(Catalog, InspectSplitModelSumsAllParts) {
    auto dir = tandem::test::temp_dir("split");
    TANDEM_GGUF_OR_SKIP(made, dir / "Big-Q4_K_M.gguf", "--split-tensors 3 --file-type 15");
    ASSERT_EQ(made.parts.size(), 3u);
    auto rec = inspect_gguf(made.parts);
    EXPECT_EQ(rec.parameters, made.parameters);
    EXPECT_EQ(rec.quant_mix, made.quant_mix);
    EXPECT_EQ(rec.size_bytes, made.total_size);
    EXPECT_EQ(rec.quant, "Q4_K_M");
    EXPECT_EQ(rec.files.size(), 3u);
    try {
        inspect_gguf({made.parts[0], made.parts[1]});
        FAIL() << "a split model with a missing part was accepted";
    } catch (const tandem::Error& e) {
        EXPECT_NE(std::string(e.what()).find("split.count is 3"), std::string::npos) << e.what();
    }
}

TEST(Catalog, InspectRejectsWhatIsNotAModel) {
    auto dir = tandem::test::temp_dir("bad");
    write_bytes(dir / "junk.gguf", std::string(4096, 'x'));
    try {
        inspect_gguf({dir / "junk.gguf"});
        FAIL();
    } catch (const tandem::Error& e) {
        EXPECT_NE(std::string(e.what()).find("junk.gguf"), std::string::npos) << e.what();
    }
    TANDEM_GGUF_OR_SKIP(vocab, dir / "vocab.gguf", "--no-tensors");
    try {
        inspect_gguf(vocab.parts);
        FAIL();
    } catch (const tandem::Error& e) {
        EXPECT_NE(std::string(e.what()).find("no tensors"), std::string::npos) << e.what();
    }
    // A download cut short: the header promises tensors past the end of the file.
    TANDEM_GGUF_OR_SKIP(whole, dir / "whole.gguf", "");
    fs::resize_file(whole.parts[0], whole.total_size / 2);
    EXPECT_THROW(inspect_gguf(whole.parts), tandem::Error);
}

TEST(Catalog, RecordsPersistInARealSqliteFile) {
    auto dir = tandem::test::temp_dir("cat");
    TANDEM_GGUF_OR_SKIP(made, dir / "m" / "Tiny-Q8_0.gguf", "--name Tiny");
    auto db = dir / "home" / "library.db";
    int64_t id = 0;
    {
        Catalog cat(db);
        auto rec = inspect_gguf(made.parts);
        rec.source_repo = "org/Tiny-GGUF";
        rec.source_revision = "main";
        rec.files[0].sha256 = std::string(64, 'a');
        rec.managed = true;
        id = cat.upsert(rec);
        EXPECT_GT(id, 0);
        EXPECT_GT(rec.added_at, 0);
        // Upserting the same path updates in place.
        rec.name = "Tiny renamed";
        EXPECT_EQ(cat.upsert(rec), id);
        EXPECT_EQ(cat.list().size(), 1u);
    }
    Catalog cat(db);
    auto all = cat.list();
    ASSERT_EQ(all.size(), 1u);
    const auto& r = all[0];
    EXPECT_EQ(r.name, "Tiny renamed");
    EXPECT_EQ(r.parameters, made.parameters);
    EXPECT_EQ(r.quant_mix, made.quant_mix);
    EXPECT_EQ(r.source_repo, "org/Tiny-GGUF");
    EXPECT_TRUE(r.managed);
    EXPECT_EQ(r.files[0].sha256, std::string(64, 'a'));
    EXPECT_EQ(cat.find(std::to_string(id))->id, id);
    EXPECT_EQ(cat.find("org/tiny-gguf:q8_0")->id, id);
    EXPECT_EQ(cat.find(made.parts[0].string())->id, id);
    EXPECT_FALSE(cat.find("nothing"));
    EXPECT_EQ(cat.get(id)->last_used_at, 0);
    cat.touch(id);
    EXPECT_GT(cat.get(id)->last_used_at, 0);

    // Python's sqlite3 reads the same rows.
    auto py = tandem::test::python();
    if (!py.empty()) {
        auto out = run("'" + py + "' -c \"import sqlite3,json; c=sqlite3.connect('" + db.string() +
                       "'); print(json.dumps(c.execute('select path, parameters, architecture, "
                       "size_bytes, context_length from models').fetchall()))\"");
        auto j = nlohmann::json::parse(out);
        ASSERT_EQ(j.size(), 1u);
        EXPECT_EQ(j[0][0], fs::absolute(made.parts[0]).string());
        EXPECT_EQ(j[0][1].get<uint64_t>(), made.parameters);
        EXPECT_EQ(j[0][2], "llama");
        EXPECT_EQ(j[0][3].get<uint64_t>(), made.total_size);
        EXPECT_EQ(j[0][4].get<uint64_t>(), 4096u);
    }
    EXPECT_TRUE(cat.remove(id));
    EXPECT_FALSE(cat.remove(id));
    EXPECT_TRUE(cat.list().empty());
}

TEST(Catalog, RefusesFilesThatAreNotItsDatabase) {
    auto dir = tandem::test::temp_dir("notdb");
    write_bytes(dir / "library.db", std::string(8192, 'z'));
    try {
        Catalog cat(dir / "library.db");
        FAIL();
    } catch (const tandem::Error& e) {
        EXPECT_NE(std::string(e.what()).find("library.db"), std::string::npos) << e.what();
    }
    auto py = tandem::test::python();
    if (py.empty()) GTEST_SKIP() << "no Python";
    auto newer = dir / "newer.db";
    run("'" + py + "' -c \"import sqlite3; c=sqlite3.connect('" + newer.string() +
        "'); c.execute('pragma user_version=9'); c.commit()\"");
    try {
        Catalog cat(newer);
        FAIL();
    } catch (const tandem::Error& e) {
        EXPECT_NE(std::string(e.what()).find("schema version 9"), std::string::npos) << e.what();
    }
}

TEST(Catalog, ImportFolderRegistersModelsAndReportsTheRest) {
    auto dir = tandem::test::temp_dir("import");
    auto models = dir / "lmstudio" / "models";
    TANDEM_GGUF_OR_SKIP(one, models / "pub" / "A-GGUF" / "A-Q8_0.gguf", "--name A");
    TANDEM_GGUF_OR_SKIP(split, models / "pub" / "B-GGUF" / "B-Q4_K_M.gguf",
                        "--name B --split-tensors 4");
    TANDEM_GGUF_OR_SKIP(gone, models / "pub" / "C-GGUF" / "C-Q8_0.gguf", "--split-tensors 3");
    fs::remove(gone.parts[1]);  // an incomplete split
    write_bytes(models / "pub" / "D" / "broken-Q4_0.gguf", "GGUF but not really");
    write_bytes(models / "pub" / "A-GGUF" / "mmproj-A-F16.gguf", "projector");
    write_bytes(models / "pub" / "E" / "E-Q8_0.gguf.part", "unfinished");

    Catalog cat(dir / "library.db");
    auto report = import_folder(cat, models);
    ASSERT_EQ(report.added.size(), 2u);
    EXPECT_EQ(report.skipped.size(), 2u);
    bool broken = false, incomplete = false;
    for (const auto& [path, why] : report.skipped) {
        if (path.filename() == "broken-Q4_0.gguf") broken = true;
        if (why.find("1 of 3") != std::string::npos || why.find("2 of 3") != std::string::npos)
            incomplete = true;
    }
    EXPECT_TRUE(broken);
    EXPECT_TRUE(incomplete);
    auto b = cat.find("B");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->files.size(), split.parts.size());
    EXPECT_EQ(b->parameters, split.parameters);
    EXPECT_EQ(cat.find("A")->size_bytes, one.total_size);
    // Scanning again changes nothing.
    import_folder(cat, models);
    EXPECT_EQ(cat.list().size(), 2u);
    EXPECT_THROW(import_folder(cat, dir / "absent"), tandem::Error);
}

TEST(LibraryPaths, EnvironmentDecidesTheHome) {
    auto dir = tandem::test::temp_dir("paths");
    setenv("TANDEM_HOME", (dir / "th").c_str(), 1);
    EXPECT_EQ(default_paths().catalog, dir / "th" / "library.db");
    unsetenv("TANDEM_HOME");
    setenv("XDG_DATA_HOME", (dir / "xdg").c_str(), 1);
    EXPECT_EQ(default_paths().models_dir, dir / "xdg" / "tandem" / "models");
    unsetenv("XDG_DATA_HOME");
    std::string old_home = getenv("HOME") ? getenv("HOME") : "";
    setenv("HOME", dir.c_str(), 1);
    EXPECT_EQ(default_paths().home, dir / ".local" / "share" / "tandem");
    EXPECT_TRUE(known_model_dirs().empty());
    fs::create_directories(dir / ".lmstudio" / "models");
    fs::create_directories(dir / ".cache" / "llama.cpp");
    auto found = known_model_dirs();
    setenv("HOME", old_home.c_str(), 1);
    ASSERT_EQ(found.size(), 2u);
    EXPECT_EQ(found[0], dir / ".cache" / "llama.cpp");
    EXPECT_EQ(found[1], dir / ".lmstudio" / "models");
}
