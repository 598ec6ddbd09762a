#include "tandem/version.h"

namespace tandem {
const char* version() { return TANDEM_VERSION; }
}  // namespace tandem
