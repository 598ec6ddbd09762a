// store-crash-writer <db> <seed> <flush interval ms>: writes conversations through ChatStore
// forever and reports every commit that returned on stdout (crash_protocol.h). The crash test
// kills it with SIGKILL at random moments.
#include <unistd.h>

#include <cstdio>
#include <random>
#include <string>

#include "crash_protocol.h"
#include "tandem/store/chat_store.h"

using namespace tandem::store;
using namespace tandem::test::crash;

namespace {
// write(2) straight away: a line must be out of this process before the next commit starts.
void report(const std::string& line) {
    std::string s = line + "\n";
    const char* p = s.data();
    size_t left = s.size();
    while (left > 0) {
        ssize_t n = ::write(1, p, left);
        if (n <= 0) std::_Exit(3);
        p += n;
        left -= size_t(n);
    }
}
}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: store-crash-writer <db> <seed> <flush interval ms>\n");
        return 2;
    }
    try {
        unsigned seed = unsigned(std::stoul(argv[2]));
        ChatStore::Options o;
        o.stream_flush_interval = std::chrono::milliseconds(std::stoi(argv[3]));
        auto store = ChatStore::open(argv[1], o);
        store->recover_interrupted();
        std::mt19937 rng(seed);
        int64_t conv = store->create_conversation({"crash writer " + std::to_string(seed)});
        report("C " + std::to_string(conv));
        for (int i = 0;; ++i) {
            std::string text = user_text(seed, i);
            int64_t u = store->append_user_message(conv, text);
            report("U " + std::to_string(u) + " " + text);
            if (rng() % 5 == 0) {
                int64_t e = store->edit_message(u, text + " (edited)");
                report("U " + std::to_string(e) + " " + text + " (edited)");
            }
            auto stream = store->begin_assistant_message(conv, "crash-model");
            report("S " + std::to_string(stream.id()) + " 0");
            int pieces = 5 + int(rng() % 40);
            for (int k = 0; k < pieces; ++k)
                if (stream.append(assistant_piece(k)))
                    report("S " + std::to_string(stream.id()) + " " +
                           std::to_string(stream.content().size()));
            size_t length = stream.content().size();
            int64_t id = stream.id();
            stream.finish({"stop", 10, pieces, 100.0});
            report("F " + std::to_string(id) + " " + std::to_string(length));
            if (rng() % 4 == 0) {
                conv = store->create_conversation({"crash writer " + std::to_string(seed)});
                report("C " + std::to_string(conv));
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "store-crash-writer: %s\n", e.what());
        return 1;
    }
}
