#include "tandem/net/record.h"

#include <cstring>

#include "tandem/net/wire.h"

namespace tandem::net {

namespace {
constexpr const char* kMagics[] = {"TNDP", "TNDC", "TNDI", "TNDE"};
}

const char* record_magic(RecordKind kind) {
    return kMagics[int(kind)];
}

const char* refusal_name(RefusalCode code) {
    switch (code) {
        case RefusalCode::NotPaired:
            return "not paired";
        case RefusalCode::WrongCode:
            return "wrong pairing code";
        case RefusalCode::PairingUnavailable:
            return "pairing unavailable";
        case RefusalCode::VersionMismatch:
            return "incompatible protocol version";
        case RefusalCode::Replay:
            return "replayed handshake";
        case RefusalCode::BadMessage:
            return "malformed message";
    }
    return "unknown refusal";
}

std::pair<RecordKind, size_t> parse_record_header(std::span<const uint8_t, 6> header) {
    int kind = -1;
    for (int i = 0; i < 4; ++i)
        if (std::memcmp(header.data(), kMagics[i], 4) == 0) kind = i;
    if (kind < 0) throw Error("record: unknown magic (not a Tandem peer)");
    size_t len = size_t(header[4]) << 8 | header[5];
    if (len > kMaxRecordBody)
        throw Error("record: body length " + std::to_string(len) + " exceeds " +
                    std::to_string(kMaxRecordBody));
    return {RecordKind(kind), len};
}

void write_record(Socket& s, RecordKind kind, std::span<const uint8_t> body,
                  Clock::time_point deadline) {
    if (body.size() > kMaxRecordBody) throw Error("record: body too large to send");
    std::vector<uint8_t> buf(6 + body.size());
    std::memcpy(buf.data(), record_magic(kind), 4);
    buf[4] = uint8_t(body.size() >> 8);
    buf[5] = uint8_t(body.size());
    std::copy(body.begin(), body.end(), buf.begin() + 6);
    s.write_all(buf, deadline);
}

Record read_record(Socket& s, Clock::time_point deadline) {
    std::array<uint8_t, 6> header;
    s.read_exact(header, deadline);
    auto [kind, len] = parse_record_header(header);
    Record r;
    r.kind = kind;
    r.body.resize(len);
    if (len) s.read_exact(r.body, deadline);
    return r;
}

std::vector<uint8_t> encode_refusal(const Refusal& r) {
    WireWriter w;
    w.u8(uint8_t(r.code));
    w.str8(r.message.size() > 255 ? r.message.substr(0, 255) : r.message, "message");
    return w.take();
}

Refusal parse_refusal(std::span<const uint8_t> body) {
    WireReader r(body, "refusal");
    Refusal out;
    uint8_t code = r.u8("code");
    if (code < 1 || code > 6) r.fail("code", "unknown refusal code " + std::to_string(code));
    out.code = RefusalCode(code);
    out.message = r.str8("message");
    r.expect_end();
    return out;
}

void send_refusal(Socket& s, RefusalCode code, const std::string& message) {
    try {
        write_record(s, RecordKind::Refusal, encode_refusal({code, message}),
                     Clock::now() + Millis(1000));
    } catch (const std::exception&) {
    }
}

std::vector<uint8_t> expect_record(Socket& s, RecordKind expected, Clock::time_point deadline,
                                   const std::string& peer) {
    Record r = read_record(s, deadline);
    if (r.kind == RecordKind::Refusal) {
        Refusal why = parse_refusal(r.body);
        throw RefusedError(why.code, peer + " refused: " + refusal_name(why.code) +
                                         (why.message.empty() ? "" : " (" + why.message + ")"));
    }
    if (r.kind != expected)
        throw Error(peer + ": expected a " + std::string(record_magic(expected)) + " record, got " +
                    record_magic(r.kind));
    return std::move(r.body);
}

}  // namespace tandem::net
