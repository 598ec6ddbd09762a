#pragma once
// Subcommand registry of tandem-cli. Each cmd_*.cpp registers one subcommand:
//
//   static tandem::cli::Register reg("tokenize", "Print the token ids of a text",
//       [](CLI::App& sub) {
//           auto opts = std::make_shared<Options>();
//           sub.add_option("-m,--model", opts->model)->required();
//           return [opts]() -> int { ...; return 0; };
//       });
//
// The setup adds options (bound to state that the returned runner keeps alive) and returns the
// runner; main() parses and calls the runner of the chosen subcommand. Runners return the exit
// code; a tandem::Error escaping a runner prints "error: <message>" and exits 1.
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace tandem::cli {

using Runner = std::function<int()>;
using Setup = std::function<Runner(CLI::App& sub)>;

struct CommandSpec {
    std::string name;
    std::string help;
    Setup setup;
};

std::vector<CommandSpec>& commands();

struct Register {
    Register(std::string name, std::string help, Setup setup) {
        commands().push_back({std::move(name), std::move(help), std::move(setup)});
    }
};

}  // namespace tandem::cli
