#pragma once
// Records: the framing of everything exchanged before a channel is encrypted (pairing, channel
// handshake, info requests, refusals). 4-byte magic + u16 body length + body, body at most
// kMaxRecordBody, so an unauthenticated peer can never make us allocate more.
#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "tandem/net/socket.h"

namespace tandem::net {

inline constexpr size_t kMaxRecordBody = 2048;

enum class RecordKind { Pairing, Channel, Info, Refusal };
const char* record_magic(RecordKind kind);  // "TNDP", "TNDC", "TNDI", "TNDE"

// Why a node refused a peer; sent in a Refusal record before closing.
enum class RefusalCode : uint8_t {
    NotPaired = 1,
    WrongCode = 2,
    PairingUnavailable = 3,  // not accepting pairing, or locked after too many wrong codes
    VersionMismatch = 4,
    Replay = 5,
    BadMessage = 6,
};
const char* refusal_name(RefusalCode code);

struct Record {
    RecordKind kind = RecordKind::Refusal;
    std::vector<uint8_t> body;
};

// Decodes the 6-byte header; throws on an unknown magic or a length over the limit.
std::pair<RecordKind, size_t> parse_record_header(std::span<const uint8_t, 6> header);
void write_record(Socket& s, RecordKind kind, std::span<const uint8_t> body,
                  Clock::time_point deadline);
Record read_record(Socket& s, Clock::time_point deadline);

struct Refusal {
    RefusalCode code = RefusalCode::BadMessage;
    std::string message;
};
std::vector<uint8_t> encode_refusal(const Refusal& r);
Refusal parse_refusal(std::span<const uint8_t> body);
// Sends a refusal and swallows errors (the peer may already be gone).
void send_refusal(Socket& s, RefusalCode code, const std::string& message);

// Thrown on the side that received a Refusal record.
class RefusedError : public Error {
  public:
    RefusedError(RefusalCode c, const std::string& what) : Error(what), code(c) {}
    RefusalCode code;
};
// Reads one record of `expected` kind; a Refusal becomes RefusedError naming `peer`.
std::vector<uint8_t> expect_record(Socket& s, RecordKind expected, Clock::time_point deadline,
                                   const std::string& peer);

}  // namespace tandem::net
