#pragma once
// Files that hold secrets or trust decisions (identity, peers.json): written atomically with mode
// 0600 in a 0700 folder, and refused on load when group/others could read or write them.
#include <filesystem>
#include <string>

namespace tandem::net {

void ensure_private_dir(const std::filesystem::path& dir);
// Writes via a temporary file and rename, so a crash never leaves a half-written file.
void write_private_file(const std::filesystem::path& file, const std::string& content);
// Throws tandem::Error when the file is missing, has group/other permission bits, or is owned
// by another user. `what` names the file's role in the message ("identity").
std::string read_private_file(const std::filesystem::path& file, const char* what);

}  // namespace tandem::net
