#include "tandem/store/types.h"

#include <string>

#include "tandem/common/error.h"

namespace tandem::store {

const char* role_name(Role r) {
    switch (r) {
        case Role::System:
            return "system";
        case Role::User:
            return "user";
        case Role::Assistant:
            return "assistant";
        case Role::Tool:
            return "tool";
    }
    return "user";
}

Role parse_role(std::string_view name) {
    for (Role r : {Role::System, Role::User, Role::Assistant, Role::Tool})
        if (name == role_name(r)) return r;
    throw Error("store: unknown message role '" + std::string(name) +
                "' (expected system, user, assistant or tool)");
}

const char* status_name(MessageStatus s) {
    switch (s) {
        case MessageStatus::Complete:
            return "complete";
        case MessageStatus::Streaming:
            return "streaming";
        case MessageStatus::Interrupted:
            return "interrupted";
    }
    return "complete";
}

MessageStatus parse_status(std::string_view name) {
    for (MessageStatus s :
         {MessageStatus::Complete, MessageStatus::Streaming, MessageStatus::Interrupted})
        if (name == status_name(s)) return s;
    throw Error("store: unknown message status '" + std::string(name) +
                "' (expected complete, streaming or interrupted)");
}

}  // namespace tandem::store
