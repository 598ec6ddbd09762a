#include "download_state.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "tandem/common/error.h"

namespace tandem::library::detail {

uint64_t DownloadState::done_bytes() const {
    uint64_t t = 0;
    for (const auto& s : segments) t += std::min(s.done, s.length());
    return t;
}

std::vector<SegmentState> plan_segments(uint64_t size, int connections, uint64_t min_segment) {
    uint64_t n = std::max<uint64_t>(1, min_segment ? size / min_segment : 1);
    n = std::min<uint64_t>(n, uint64_t(std::max(1, connections)));
    std::vector<SegmentState> segs;
    uint64_t base = size / n, extra = size % n, pos = 0;
    for (uint64_t i = 0; i < n; ++i) {
        uint64_t len = base + (i < extra ? 1 : 0);
        segs.push_back({pos, pos + len, 0});
        pos += len;
    }
    return segs;
}

std::optional<DownloadState> load_state(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    try {
        auto j = nlohmann::json::parse(in);
        DownloadState s;
        s.url = j.at("url").get<std::string>();
        s.etag = j.at("etag").get<std::string>();
        s.size = j.at("size").get<uint64_t>();
        uint64_t expect = 0;
        for (const auto& e : j.at("segments")) {
            SegmentState seg{e.at("start").get<uint64_t>(), e.at("end").get<uint64_t>(),
                             e.at("done").get<uint64_t>()};
            // Segments must tile [0, size) in order, each with done within its length.
            if (seg.start != expect || seg.end < seg.start || seg.done > seg.length())
                return std::nullopt;
            expect = seg.end;
            s.segments.push_back(seg);
        }
        if (expect != s.size || s.segments.empty()) return std::nullopt;
        return s;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

void save_state(const std::filesystem::path& path, const DownloadState& state) {
    nlohmann::json j;
    j["version"] = 1;
    j["url"] = state.url;
    j["etag"] = state.etag;
    j["size"] = state.size;
    auto& segs = j["segments"] = nlohmann::json::array();
    for (const auto& s : state.segments)
        segs.push_back({{"start", s.start}, {"end", s.end}, {"done", s.done}});
    auto tmp = path;
    tmp += ".tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << j.dump(1);
        if (!out.flush()) throw Error("download: cannot write " + tmp.string());
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) throw Error("download: cannot write " + path.string() + ": " + ec.message());
}

}  // namespace tandem::library::detail
