// libibverbs end of an RDMA connection: device and GID choice, memlock check, registered ring
// and mirror, RC queue pair, and the RdmaLink the ring protocol drives.
#include "verbs_endpoint.h"

#ifdef TANDEM_HAVE_IBVERBS

#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <sys/resource.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#endif

namespace tandem::net {

#ifndef TANDEM_HAVE_IBVERBS

std::unique_ptr<VerbsEndpoint> VerbsEndpoint::open(const std::string&, const RdmaOptions&,
                                                   std::string& why_not) {
    why_not = "this build has no RDMA support (libibverbs-dev was missing at build time)";
    return nullptr;
}

std::unique_ptr<RdmaLink> make_verbs_link(std::unique_ptr<VerbsEndpoint>,
                                          std::unique_ptr<Transport>) {
    throw Error("this build has no RDMA support");
}

std::string verbs_device_problem() {
    return "this build has no RDMA support (libibverbs-dev was missing at build time)";
}

#else

namespace {

constexpr uint32_t kSendQueueDepth = 128;
constexpr uint32_t kWantInline = 256;

// Bytes locked or pinned by this process now, and whether it may pin without limit.
void locked_memory_now(uint64_t& already, bool& cap_ipc_lock) {
    already = 0;
    cap_ipc_lock = false;
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line)) {
        std::istringstream in(line);
        std::string key;
        in >> key;
        if (key == "VmLck:" || key == "VmPin:") {
            uint64_t kb = 0;
            in >> kb;
            already += kb * 1024;
        } else if (key == "CapEff:") {
            std::string hex;
            in >> hex;
            cap_ipc_lock = (std::stoull(hex, nullptr, 16) >> 14) & 1;  // CAP_IPC_LOCK = 14
        }
    }
}

std::string list_failure(int err) {
    if (err == ENOSYS)
        return "no RDMA support in this kernel (ibv_get_device_list: ENOSYS; "
               "/sys/class/infiniband absent)";
    return std::string("cannot list RDMA devices: ") + std::strerror(err);
}

std::string mtu_bytes(int mtu) {
    return std::to_string(128 << mtu);
}

struct DeviceList {
    ibv_device** list = nullptr;
    int n = 0;
    DeviceList() { list = ibv_get_device_list(&n); }
    ~DeviceList() {
        if (list) ibv_free_device_list(list);
    }
};

class VerbsLink;

class VerbsEndpointImpl : public VerbsEndpoint {
  public:
    ~VerbsEndpointImpl() override {
        if (qp_) ibv_destroy_qp(qp_);
        if (cq_) ibv_destroy_cq(cq_);
        if (recv_mr_) ibv_dereg_mr(recv_mr_);
        if (send_mr_) ibv_dereg_mr(send_mr_);
        if (pd_) ibv_dealloc_pd(pd_);
        if (ctx_) ibv_close_device(ctx_);
        std::free(ring_);
        std::free(mirror_);
    }

    // Finds the port for `ip`; "" on success, else why none fits.
    std::string pick_port(const std::array<uint8_t, 16>& ip, const std::string& ip_text,
                          const std::string& only) {
        DeviceList devices;
        if (!devices.list) return list_failure(errno);
        if (devices.n == 0) return "no RDMA (verbs) device on this host";
        std::string seen;
        for (int d = 0; d < devices.n && !ctx_; ++d) {
            const char* name = ibv_get_device_name(devices.list[d]);
            if (!only.empty() && only != name) continue;
            ibv_context* ctx = ibv_open_device(devices.list[d]);
            if (!ctx) {
                seen += std::string(" ") + name + ": cannot open;";
                continue;
            }
            ibv_device_attr dattr{};
            if (ibv_query_device(ctx, &dattr) != 0) {
                ibv_close_device(ctx);
                continue;
            }
            int ib_port = 0;
            for (uint8_t p = 1; p <= dattr.phys_port_cnt && !ctx_; ++p) {
                ibv_port_attr pattr{};
                if (ibv_query_port(ctx, p, &pattr) != 0) continue;
                if (pattr.state != IBV_PORT_ACTIVE) {
                    seen +=
                        std::string(" ") + name + " port " + std::to_string(p) + ": not active;";
                    continue;
                }
                if (pattr.link_layer != IBV_LINK_LAYER_ETHERNET) {
                    if (!ib_port) ib_port = p;
                    continue;
                }
                for (int idx = 0; idx < pattr.gid_tbl_len; ++idx) {
                    ibv_gid_entry e{};
                    if (ibv_query_gid_ex(ctx, p, static_cast<uint32_t>(idx), &e, 0) != 0) continue;
                    if (e.gid_type != IBV_GID_TYPE_ROCE_V2) continue;
                    if (std::memcmp(e.gid.raw, ip.data(), 16) != 0) continue;
                    take(ctx, dattr, pattr, p, idx, 2);
                    break;
                }
                if (!ctx_)
                    seen += std::string(" ") + name + " port " + std::to_string(p) +
                            ": RoCE, no RoCE v2 GID for " + ip_text + ";";
            }
            if (!ctx_ && ib_port) {
                ibv_port_attr pattr{};
                ibv_query_port(ctx, static_cast<uint8_t>(ib_port), &pattr);
                take(ctx, dattr, pattr, static_cast<uint8_t>(ib_port), 0, 1);
            }
            if (!ctx_) ibv_close_device(ctx);
        }
        if (ctx_) return "";
        if (!only.empty() && seen.empty()) return "no RDMA device named " + only;
        return "no active RDMA port carries " + ip_text + " (" + seen + " )";
    }

    // Memlock, registration, queues; "" on success.
    std::string build(const RdmaOptions& opts) {
        size_t granule = opts.granule;
        RingGeometry geo = make_ring_geometry(opts.ring_bytes, granule);
        while (geo.receive_depth() > uint32_t(dattr_.max_qp_wr) ||
               geo.receive_depth() + kSendQueueDepth > uint32_t(dattr_.max_cqe)) {
            granule *= 2;
            geo = make_ring_geometry(opts.ring_bytes, granule);
        }
        geo_ = geo;
        const size_t bytes = geo_.ring_bytes();
        rlimit lim{};
        getrlimit(RLIMIT_MEMLOCK, &lim);
        uint64_t already = 0;
        bool cap = false;
        locked_memory_now(already, cap);
        const uint64_t limit = lim.rlim_cur == RLIM_INFINITY ? UINT64_MAX : lim.rlim_cur;
        const uint64_t needed = 2 * bytes + (64 << 10);  // + queue pair and CQ buffers
        if (auto s = memlock_shortfall(limit, already, needed, cap); !s.empty()) return s;

        const size_t alloc = (bytes + 4095) / 4096 * 4096;
        ring_ = static_cast<uint8_t*>(std::aligned_alloc(4096, alloc));
        mirror_ = static_cast<uint8_t*>(std::aligned_alloc(4096, alloc));
        if (!ring_ || !mirror_) return "out of memory for the rings";
        std::memset(ring_, 0, alloc);
        pd_ = ibv_alloc_pd(ctx_);
        if (!pd_) return std::string("ibv_alloc_pd: ") + std::strerror(errno);
        recv_mr_ = ibv_reg_mr(pd_, ring_, bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
        if (recv_mr_) send_mr_ = ibv_reg_mr(pd_, mirror_, bytes, IBV_ACCESS_LOCAL_WRITE);
        if (!recv_mr_ || !send_mr_) {
            const int err = errno;
            return std::string("registering ") + std::to_string(2 * bytes >> 10) +
                   " KiB of ring failed: " + std::strerror(err) +
                   (err == ENOMEM || err == EPERM || err == EAGAIN ? "; " + memlock_advice()
                                                                   : std::string());
        }
        cq_ = ibv_create_cq(ctx_, static_cast<int>(geo_.receive_depth() + kSendQueueDepth), nullptr,
                            nullptr, 0);
        if (!cq_) return std::string("ibv_create_cq: ") + std::strerror(errno);
        for (uint32_t want_inline : {kWantInline, 64u, 0u}) {
            ibv_qp_init_attr init{};
            init.send_cq = cq_;
            init.recv_cq = cq_;
            init.qp_type = IBV_QPT_RC;
            init.sq_sig_all = 0;
            init.cap.max_send_wr = kSendQueueDepth;
            init.cap.max_recv_wr = geo_.receive_depth();
            init.cap.max_send_sge = 1;
            init.cap.max_recv_sge = 1;
            init.cap.max_inline_data = want_inline;
            qp_ = ibv_create_qp(pd_, &init);
            if (qp_) {
                max_inline_ = init.cap.max_inline_data;
                break;
            }
        }
        if (!qp_) return std::string("ibv_create_qp (RC): ") + std::strerror(errno);
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_INIT;
        a.pkey_index = 0;
        a.port_num = port_;
        a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
        if (int e = ibv_modify_qp(
                qp_, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
            return std::string("queue pair to INIT: ") + std::strerror(e);
        if (!post_receives(geo_.receive_depth()))
            return std::string("posting receives: ") + std::strerror(errno);
        psn_ = std::random_device{}() & 0xffffff;
        return "";
    }

    RdmaOffer offer() const override {
        RdmaOffer o;
        o.link_layer = link_layer_;
        o.port = port_;
        o.mtu = static_cast<uint8_t>(mtu_);
        o.lid = lid_;
        std::memcpy(o.gid.data(), gid_.raw, 16);
        o.qpn = qp_->qp_num;
        o.psn = psn_;
        o.rkey = recv_mr_->rkey;
        o.ring_addr = reinterpret_cast<uint64_t>(ring_);
        o.ring_bytes = static_cast<uint32_t>(geo_.ring_bytes());
        o.granule = geo_.granule;
        return o;
    }

    void connect(const RdmaOffer& peer) override {
        peer_ = peer;
        ibv_qp_attr a{};
        a.qp_state = IBV_QPS_RTR;
        a.path_mtu = static_cast<ibv_mtu>(std::min<int>(mtu_, peer.mtu));
        a.dest_qp_num = peer.qpn;
        a.rq_psn = peer.psn;
        a.max_dest_rd_atomic = 1;
        a.min_rnr_timer = 12;
        a.ah_attr.port_num = port_;
        a.ah_attr.dlid = peer.lid;
        if (link_layer_ == 2 || peer.lid == 0) {
            a.ah_attr.is_global = 1;
            std::memcpy(a.ah_attr.grh.dgid.raw, peer.gid.data(), 16);
            a.ah_attr.grh.sgid_index = static_cast<uint8_t>(gid_index_);
            a.ah_attr.grh.hop_limit = 64;
        }
        if (int e =
                ibv_modify_qp(qp_, &a,
                              IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                                  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
            throw Error(std::string("queue pair to RTR (MTU ") +
                        mtu_bytes(std::min<int>(mtu_, peer.mtu)) + "): " + std::strerror(e));
        ibv_qp_attr r{};
        r.qp_state = IBV_QPS_RTS;
        r.timeout = 14;  // 4.096 us * 2^14 = 67 ms per retry
        r.retry_cnt = 7;
        r.rnr_retry = 7;
        r.sq_psn = psn_;
        r.max_rd_atomic = 1;
        if (int e = ibv_modify_qp(qp_, &r,
                                  IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
            throw Error(std::string("queue pair to RTS: ") + std::strerror(e));
    }

    bool post_receives(uint32_t count) {
        // Receives for writes with immediate carry no buffer: the data lands where the write says.
        ibv_recv_wr wr{};
        ibv_recv_wr* bad = nullptr;
        for (uint32_t i = 0; i < count; ++i)
            if (ibv_post_recv(qp_, &wr, &bad) != 0) return false;
        return true;
    }

    ibv_context* ctx_ = nullptr;
    ibv_device_attr dattr_{};
    ibv_pd* pd_ = nullptr;
    ibv_mr *recv_mr_ = nullptr, *send_mr_ = nullptr;
    ibv_cq* cq_ = nullptr;
    ibv_qp* qp_ = nullptr;
    uint8_t* ring_ = nullptr;
    uint8_t* mirror_ = nullptr;
    RingGeometry geo_;
    uint8_t port_ = 0, link_layer_ = 0;
    int gid_index_ = 0;
    ibv_mtu mtu_ = IBV_MTU_1024;
    uint16_t lid_ = 0;
    ibv_gid gid_{};
    uint32_t psn_ = 0;
    size_t max_inline_ = 0;
    RdmaOffer peer_;

  private:
    void take(ibv_context* ctx, const ibv_device_attr& dattr, const ibv_port_attr& pattr,
              uint8_t port, int gid_index, uint8_t link_layer) {
        ctx_ = ctx;
        dattr_ = dattr;
        port_ = port;
        gid_index_ = gid_index;
        link_layer_ = link_layer;
        mtu_ = pattr.active_mtu;
        lid_ = pattr.lid;
        ibv_query_gid(ctx, port, gid_index, &gid_);
    }
};

class VerbsLink : public RdmaLink {
  public:
    VerbsLink(std::unique_ptr<VerbsEndpointImpl> ep, std::unique_ptr<Transport> side)
        : ep_(std::move(ep)), side_(std::move(side)) {}
    ~VerbsLink() override { shutdown(); }

    RingGeometry geometry() const override { return ep_->geo_; }
    uint8_t* send_mirror() override { return ep_->mirror_; }
    const uint8_t* recv_ring() const override { return ep_->ring_; }
    size_t max_inline() const override { return ep_->max_inline_; }
    uint32_t send_queue_depth() const override { return kSendQueueDepth; }

    void post_write(size_t offset, uint32_t len, uint32_t imm, const uint8_t* inline_data,
                    bool signaled) override {
        ibv_sge sge{};
        sge.addr = reinterpret_cast<uint64_t>(inline_data ? inline_data : ep_->mirror_ + offset);
        sge.length = len;
        sge.lkey = ep_->send_mr_->lkey;
        ibv_send_wr wr{};
        ibv_send_wr* bad = nullptr;
        wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
        wr.imm_data = htonl(imm);
        wr.send_flags = (signaled ? unsigned(IBV_SEND_SIGNALED) : 0u) |
                        (inline_data ? unsigned(IBV_SEND_INLINE) : 0u);
        wr.sg_list = len ? &sge : nullptr;
        wr.num_sge = len ? 1 : 0;
        wr.wr.rdma.remote_addr = ep_->peer_.ring_addr + offset;
        wr.wr.rdma.rkey = ep_->peer_.rkey;
        if (int e = ibv_post_send(ep_->qp_, &wr, &bad))
            throw Error(std::string("rdma: ibv_post_send: ") + std::strerror(e));
    }

    void post_receives(uint32_t count) override {
        if (!ep_->post_receives(count))
            throw Error(std::string("rdma: ibv_post_recv: ") + std::strerror(errno));
    }

    int poll(std::span<RdmaCompletion> out) override {
        ibv_wc wc[16];
        const int n = ibv_poll_cq(ep_->cq_, static_cast<int>(std::min<size_t>(16, out.size())), wc);
        if (n < 0) {
            out[0] = {RdmaCompletion::Kind::Failed, 0, 0, "ibv_poll_cq failed"};
            return 1;
        }
        for (int i = 0; i < n; ++i) {
            RdmaCompletion& c = out[static_cast<size_t>(i)];
            c = {};
            if (wc[i].status != IBV_WC_SUCCESS) {
                c.kind = RdmaCompletion::Kind::Failed;
                c.error = ibv_wc_status_str(wc[i].status);
            } else if (wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
                c.kind = RdmaCompletion::Kind::Received;
                c.imm = ntohl(wc[i].imm_data);
                c.byte_len = wc[i].byte_len;
            } else {
                c.kind = RdmaCompletion::Kind::SendDone;
            }
        }
        return n;
    }

    bool peer_gone() override {
        if (!side_) return false;
        try {
            side_->recv(probe_, Millis(0));
            return false;  // nothing is sent there after set-up; ignore it
        } catch (const TimeoutError&) {
            return false;
        } catch (const std::exception&) {
            return true;
        }
    }

    void shutdown() override {
        if (side_) side_->close();
    }

    std::string describe() const override {
        return (side_ ? side_->describe() : std::string("?")) + " (verbs " +
               ibv_get_device_name(ep_->ctx_->device) + ")";
    }

  private:
    std::unique_ptr<VerbsEndpointImpl> ep_;
    std::unique_ptr<Transport> side_;
    std::vector<uint8_t> probe_;
};

}  // namespace

std::unique_ptr<RdmaLink> make_verbs_link(std::unique_ptr<VerbsEndpoint> connected,
                                          std::unique_ptr<Transport> side_channel) {
    return std::make_unique<VerbsLink>(
        std::unique_ptr<VerbsEndpointImpl>(static_cast<VerbsEndpointImpl*>(connected.release())),
        std::move(side_channel));
}

std::unique_ptr<VerbsEndpoint> VerbsEndpoint::open(const std::string& local_ip,
                                                   const RdmaOptions& opts, std::string& why_not) {
    std::array<uint8_t, 16> ip{};
    if (!ip_to_bytes(local_ip, ip)) {
        why_not = "cannot parse the local address '" + local_ip + "'";
        return nullptr;
    }
    auto ep = std::make_unique<VerbsEndpointImpl>();
    why_not = ep->pick_port(ip, local_ip, opts.device);
    if (!why_not.empty()) return nullptr;
    try {
        why_not = ep->build(opts);
    } catch (const std::exception& e) {
        why_not = e.what();
    }
    if (!why_not.empty()) return nullptr;
    return ep;
}

std::string verbs_device_problem() {
    DeviceList devices;
    if (!devices.list) return list_failure(errno);
    if (devices.n == 0)
        return "no RDMA (verbs) device on this host (/sys/class/infiniband is empty or absent)";
    return "";
}

#endif

}  // namespace tandem::net
