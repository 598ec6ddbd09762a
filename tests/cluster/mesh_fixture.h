#pragma once
// A tensor-parallel group of n ranks in one test process: one thread per rank, each with its own
// listener on a free 127.0.0.1 port and a real TCP mesh to the others.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "tandem/net/collective_group.h"
#include "tandem/net/transport_mesh.h"

namespace tandem::test {

// Runs body(rank, collective) on every rank; returns each rank's error text ("" when none).
inline std::vector<std::string> run_group(
    int n, const std::function<void(int, net::TransportCollective&)>& body,
    net::CollectiveOptions copts = {}) {
    std::vector<std::unique_ptr<net::Listener>> listeners;
    std::vector<net::HostPort> addresses;
    for (int r = 0; r < n; ++r) {
        listeners.push_back(std::make_unique<net::Listener>(0, "127.0.0.1"));
        addresses.push_back({"127.0.0.1", listeners.back()->port()});
    }
    std::vector<std::string> errors(static_cast<size_t>(n));
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
        threads.emplace_back([&, r] {
            try {
                net::MeshOptions mo;
                mo.secret = "test-secret";
                net::TransportCollective c(r, net::connect_mesh(r, addresses, *listeners[r], mo),
                                           copts);
                body(r, c);
            } catch (const std::exception& e) {
                errors[r] = e.what();
            }
        });
    for (auto& t : threads) t.join();
    return errors;
}

}  // namespace tandem::test
