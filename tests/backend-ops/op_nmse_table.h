#pragma once
// The op suite's NMSE table: every checked case prints one line as it runs (so a GPU log shows how
// close each case came, not only pass/fail), and the test program's end prints one row per
// (op, backend) with the worst NMSE against the double reference and against the CPU backend.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <utility>

namespace tandem::test {

class NmseTable {
  public:
    static NmseTable& instance() {
        static NmseTable t;
        return t;
    }
    // vs_cpu < 0: not compared with the CPU backend (the CPU backend itself, or exact checks).
    void add(const std::string& op, const std::string& backend, const std::string& what,
             double vs_f64, double vs_cpu) {
        std::printf("| %s | %s | %s | %.2e | %s |\n", op.c_str(), backend.c_str(), what.c_str(),
                    vs_f64, vs_cpu < 0 ? "-" : fmt(vs_cpu).c_str());
        std::lock_guard<std::mutex> lock(mu_);
        Row& r = rows_[{op, backend}];
        ++r.cases;
        r.f64 = std::max(r.f64, vs_f64);
        if (vs_cpu >= 0) r.cpu = std::max(r.cpu, vs_cpu);
    }
    void print() const {
        if (rows_.empty()) return;
        std::printf("\nNMSE per op and backend (worst case)\n");
        std::printf("| op | backend | cases | max NMSE vs f64 | max NMSE vs cpu |\n");
        std::printf("|---|---|---|---|---|\n");
        for (const auto& [key, r] : rows_)
            std::printf("| %s | %s | %d | %.2e | %s |\n", key.first.c_str(), key.second.c_str(),
                        r.cases, r.f64, r.cpu < 0 ? "-" : fmt(r.cpu).c_str());
    }

  private:
    struct Row {
        int cases = 0;
        double f64 = 0, cpu = -1;
    };
    static std::string fmt(double v) {
        char b[32];
        std::snprintf(b, sizeof b, "%.2e", v);
        return b;
    }
    std::mutex mu_;
    std::map<std::pair<std::string, std::string>, Row> rows_;
};

// Prints the summary once all tests have run.
class NmseTableEnvironment : public ::testing::Environment {
  public:
    void TearDown() override { NmseTable::instance().print(); }
};

// One registration per program, whichever test file includes this first.
inline ::testing::Environment* const kNmseTableEnvironment =
    ::testing::AddGlobalTestEnvironment(new NmseTableEnvironment);

}  // namespace tandem::test
