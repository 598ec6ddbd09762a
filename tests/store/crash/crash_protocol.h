#pragma once
// What the crash writer tells the crash test, one line per commit that returned:
//   C <conversation id>            a conversation was created
//   U <message id> <text>          a user message (or an edit) with exactly <text>
//   S <message id> <length>        an assistant message holds at least <length> bytes of
//                                  assistant_text(); "S <id> 0" right after it was started
//   F <message id> <length>        that message was finished: complete, exactly <length> bytes
// Assistant text is always a prefix of assistant_text(), so any committed state can be checked.
#include <string>

namespace tandem::test::crash {

inline std::string assistant_piece(int k) {
    return "t" + std::to_string(k) + " ";
}

// The first `length` bytes of "t0 t1 t2 ...".
inline std::string assistant_text(size_t length) {
    std::string s;
    for (int k = 0; s.size() < length; ++k) s += assistant_piece(k);
    return s.substr(0, length);
}

inline std::string user_text(unsigned seed, int i) {
    return "question " + std::to_string(i) + " of writer " + std::to_string(seed) +
           " about llamas, ünïcode and \"quotes\"";
}

}  // namespace tandem::test::crash
