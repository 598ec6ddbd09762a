#pragma once
namespace tandem {
// "0.1.0"
const char* version();
}  // namespace tandem
