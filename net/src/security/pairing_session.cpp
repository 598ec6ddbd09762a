#include "tandem/net/pairing_session.h"

#include <ctime>

#include "tandem/common/log.h"
#include "tandem/net/record.h"

namespace tandem::net {

PairedPeer pair_with(const HostPort& to, const Identity& self, const std::string& self_name,
                     const std::string& code, PeerStore& peers, const PairOptions& opts) {
    PakeInitiator pake(self, self_name, code);
    auto deadline = Clock::now() + opts.timeout;
    Socket sock = Socket::connect(to, opts.timeout);
    std::string who = to.str();
    write_record(sock, RecordKind::Pairing, pake.hello(), deadline);
    auto reply = expect_record(sock, RecordKind::Pairing, deadline, who);
    write_record(sock, RecordKind::Pairing, pake.on_reply(reply), deadline);
    auto result = expect_record(sock, RecordKind::Pairing, deadline, who);
    PairedWith with = pake.on_result(result);
    if (!opts.expect_node_id.empty() && with.node_id != opts.expect_node_id)
        throw PairingFailed("pairing: " + who + " proved the code but is node " + with.node_id +
                            ", not the chosen " + opts.expect_node_id);
    PairedPeer peer{with.node_id, with.name, with.keys, int64_t(std::time(nullptr)), who};
    peers.add(peer);
    log_info("pairing: paired with node " + short_id(peer.node_id) + " (" + peer.name + ") at " +
             who);
    return peer;
}

std::optional<PairedPeer> serve_pairing(Socket& sock, std::span<const uint8_t> hello,
                                        const Identity& self, const std::string& self_name,
                                        PairingGate& gate, PeerStore& peers, Millis timeout) {
    std::string from = sock.peer_address();
    auto deadline = Clock::now() + timeout;
    std::string why;
    auto code = gate.begin_attempt(&why);
    if (!code) {
        log_warn("pairing: refused " + from + ": " + why);
        send_refusal(sock, RefusalCode::PairingUnavailable, why);
        return std::nullopt;
    }
    // Whatever happens below, the attempt ends exactly once and the gate learns how. The gate
    // is told before the peer hears the outcome, so an immediate retry sees the new state.
    struct EndAttempt {
        PairingGate& gate;
        bool done = false;
        void finish(PairingGate::Outcome o) {
            if (!done) gate.end_attempt(o);
            done = true;
        }
        ~EndAttempt() { finish(PairingGate::Outcome::Aborted); }
    } end{gate};

    PakeResponder pake(self, self_name, *code);
    std::vector<uint8_t> reply;
    try {
        reply = pake.on_hello(hello);
    } catch (const RefusedError& e) {
        log_warn("pairing: refused " + from + ": " + e.what());
        send_refusal(sock, e.code, e.what());
        return std::nullopt;
    } catch (const Error& e) {
        log_warn("pairing: refused " + from + ": malformed hello: " + e.what());
        send_refusal(sock, RefusalCode::BadMessage, e.what());
        return std::nullopt;
    }
    std::string who =
        "node " + short_id(pake.peer().node_id) + " (" + pake.peer().name + ") at " + from;
    std::optional<std::vector<uint8_t>> result;
    try {
        write_record(sock, RecordKind::Pairing, reply, deadline);
        auto confirm = expect_record(sock, RecordKind::Pairing, deadline, who);
        result = pake.on_confirm(confirm);
    } catch (const Error& e) {
        log_warn("pairing: " + who + ": attempt abandoned: " + e.what());
        return std::nullopt;
    }
    if (!result) {
        int left = gate.attempts_left() - 1;
        end.finish(PairingGate::Outcome::WrongCode);
        std::string msg = left > 0 ? std::to_string(left) + " attempt(s) left for this code"
                                   : "code burnt; pairing locked, a new code will be shown";
        log_warn("pairing: wrong code from " + who + " (" + msg + ")");
        send_refusal(sock, RefusalCode::WrongCode, msg);
        return std::nullopt;
    }
    PairedPeer peer{pake.peer().node_id, pake.peer().name, pake.peer().keys,
                    int64_t(std::time(nullptr)), from};
    peers.add(peer);
    end.finish(PairingGate::Outcome::Paired);
    try {
        write_record(sock, RecordKind::Pairing, *result, deadline);
    } catch (const Error& e) {
        log_warn("pairing: " + who + ": could not send the result: " + e.what());
    }
    log_info("pairing: paired with " + who);
    return peer;
}

}  // namespace tandem::net
