// The RDMA transport on a real verbs device (InfiniBand, RoCE, or soft-RoCE rxe): two ends in
// this process negotiate over TCP on an address the device carries and must pick RDMA; messages
// then cross the device. Skipped, with the reason, where no device exists (CI, containers).
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <thread>

#include "tandem/net/collective_group.h"
#include "tandem/net/rdma_transport.h"

namespace tandem::test {
namespace {

std::vector<std::string> ipv4_addresses() {
    std::vector<std::string> out;
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) return out;
    for (ifaddrs* a = list; a; a = a->ifa_next) {
        if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET) continue;
        char buf[INET_ADDRSTRLEN] = {};
        inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr, buf,
                  sizeof buf);
        out.emplace_back(buf);
    }
    freeifaddrs(list);
    return out;
}

// Both ends of one connection over `ip`, negotiated.
std::pair<net::TransportChoice, net::TransportChoice> negotiate_over(const std::string& ip) {
    net::Listener l(0, ip);
    net::Socket client;
    std::thread c([&] { client = net::Socket::connect({ip, l.port()}, net::Millis(2000)); });
    net::Socket server = l.accept(net::Millis(2000));
    c.join();
    const std::string ip_c = net::local_ip_of(client), ip_s = net::local_ip_of(server);
    net::TransportChoice a;
    std::thread t([&] {
        a = net::negotiate_transport(net::make_tcp_transport(std::move(client)), ip_c, {},
                                     net::Millis(5000));
    });
    auto b = net::negotiate_transport(net::make_tcp_transport(std::move(server)), ip_s, {},
                                      net::Millis(5000));
    t.join();
    return {std::move(a), std::move(b)};
}

TEST(RdmaVerbs, LoopbackOverARealDevice) {
    if (auto why = net::rdma_device_problem(); !why.empty())
        GTEST_SKIP() << "no RDMA device, RDMA hardware test skipped: " << why
                     << ". On a Linux host with CONFIG_RDMA_RXE, `rdma link add rxe0 type rxe "
                        "netdev <nic>` gives a soft-RoCE device.";
    std::string reasons;
    for (const auto& ip : ipv4_addresses()) {
        auto [a, b] = negotiate_over(ip);
        ASSERT_EQ(a.rdma_refused.empty(), b.rdma_refused.empty()) << "the ends disagree";
        if (!a.rdma_refused.empty()) {
            reasons += ip + ": " + a.rdma_refused + "\n";
            continue;
        }
        EXPECT_NE(a.transport->describe().find("rdma"), std::string::npos);
        std::thread sender([&] {
            for (size_t n : {size_t(0), size_t(1), size_t(200), size_t(4096), size_t(3) << 20})
                a.transport->send(std::vector<uint8_t>(n, uint8_t(n * 7)), net::Millis(5000));
        });
        std::vector<uint8_t> got;
        for (size_t n : {size_t(0), size_t(1), size_t(200), size_t(4096), size_t(3) << 20}) {
            b.transport->recv(got, net::Millis(5000));
            EXPECT_EQ(got, std::vector<uint8_t>(n, uint8_t(n * 7))) << n << " bytes";
        }
        sender.join();
        a.transport->close();
        EXPECT_THROW(b.transport->recv(got, net::Millis(2000)), net::ClosedError);
        return;
    }
    // A device exists but no local address is on an active port of it (e.g. a port that is down).
    GTEST_SKIP() << "RDMA device present but no local address negotiated RDMA:\n" << reasons;
}

}  // namespace
}  // namespace tandem::test
