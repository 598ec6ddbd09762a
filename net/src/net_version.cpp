#include "tandem/net/net_version.h"
