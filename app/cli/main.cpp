// tandem-cli: the command-line face of Tandem (contract: docs/cli.md).
#include <cstdio>
#include <map>

#include "command.h"
#include "tandem/common/error.h"
#include "tandem/version.h"

namespace tandem::cli {
std::vector<CommandSpec>& commands() {
    static std::vector<CommandSpec> list;
    return list;
}
}  // namespace tandem::cli

int main(int argc, char** argv) {
    using namespace tandem::cli;
    CLI::App app{"Tandem: run large language models locally, alone or as a cluster"};
    app.name("tandem-cli");
    app.set_version_flag("--version", std::string("tandem-cli ") + tandem::version());
    app.require_subcommand(1);
    std::map<CLI::App*, Runner> runners;
    for (auto& spec : commands()) {
        CLI::App* sub = app.add_subcommand(spec.name, spec.help);
        runners[sub] = spec.setup(*sub);
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    for (auto& [sub, run] : runners) {
        if (!sub->parsed()) continue;
        try {
            return run();
        } catch (const std::exception& e) {
            std::fflush(stdout);
            std::fprintf(stderr, "error: %s\n", e.what());
            return 1;
        }
    }
    return 1;
}
