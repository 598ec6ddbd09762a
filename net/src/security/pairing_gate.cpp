#include <sodium.h>

#include <cstdio>

#include "tandem/net/pairing.h"

namespace tandem::net {

using SteadyClock = std::chrono::steady_clock;

std::string generate_pairing_code() {
    ensure_sodium();
    char buf[16];
    std::snprintf(buf, sizeof buf, "%08u", unsigned(randombytes_uniform(100000000u)));
    return buf;
}

std::string normalize_pairing_code(std::string_view typed) {
    std::string digits;
    for (char c : typed) {
        if (c >= '0' && c <= '9')
            digits.push_back(c);
        else if (c != ' ' && c != '-')
            throw Error("pairing code: unexpected character '" + std::string(1, c) +
                        "' (the code is 8 digits, like 1234-5678)");
    }
    if (digits.size() != 8)
        throw Error("pairing code: expected 8 digits, got " + std::to_string(digits.size()));
    return digits;
}

std::string format_pairing_code(const std::string& digits) {
    if (digits.size() != 8) return digits;
    return digits.substr(0, 4) + "-" + digits.substr(4);
}

PairingGate::PairingGate(PairingPolicy policy) : policy_(policy) {}

void PairingGate::refresh_locked(SteadyClock::time_point now) {
    if (now < locked_until_) {
        code_.clear();
        return;
    }
    if (code_.empty() || now >= expires_) {
        code_ = generate_pairing_code();
        expires_ = now + policy_.lifetime;
        failures_ = 0;
    }
}

std::optional<std::string> PairingGate::current_code() {
    std::lock_guard g(mutex_);
    refresh_locked(SteadyClock::now());
    if (code_.empty()) return std::nullopt;
    return code_;
}

std::optional<std::string> PairingGate::begin_attempt(std::string* why) {
    std::lock_guard g(mutex_);
    auto now = SteadyClock::now();
    refresh_locked(now);
    if (code_.empty()) {
        auto left =
            std::chrono::duration_cast<std::chrono::seconds>(locked_until_ - now).count() + 1;
        if (why)
            *why = "locked for " + std::to_string(left) + " s after " +
                   std::to_string(policy_.max_attempts) + " wrong codes";
        return std::nullopt;
    }
    if (busy_) {
        if (why) *why = "another pairing attempt is in progress";
        return std::nullopt;
    }
    busy_ = true;
    return code_;
}

void PairingGate::end_attempt(Outcome outcome) {
    std::lock_guard g(mutex_);
    busy_ = false;
    if (outcome == Outcome::Aborted) return;
    if (outcome == Outcome::Paired) {
        code_.clear();  // one-time: the next caller sees a new code
        failures_ = 0;
        return;
    }
    if (++failures_ >= policy_.max_attempts) {
        code_.clear();
        failures_ = 0;
        locked_until_ = SteadyClock::now() + policy_.lockout;
    }
}

int PairingGate::attempts_left() const {
    std::lock_guard g(mutex_);
    return policy_.max_attempts - failures_;
}

std::string PairingGate::renew() {
    std::lock_guard g(mutex_);
    locked_until_ = {};
    code_.clear();
    refresh_locked(SteadyClock::now());
    return code_;
}

}  // namespace tandem::net
