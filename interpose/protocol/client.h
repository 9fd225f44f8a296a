// The client end of the wire protocol: blocking POSIX socket I/O, no dependencies beyond libc,
// so the shims can use it inside the training process (and tests can play a process).
#pragma once

#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "protocol/wire.h"

namespace myriad::wire {

class Client {
 public:
  ~Client() { Close(); }

  // Connects to the server's socket; false (with errno set) on failure.
  bool Connect(const std::string& path) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) return false;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof(addr.sun_path)) return false;
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    return ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  }
  void Close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  bool SendFrame(FrameType type, const std::string& payload) {
    std::string frame;
    Append(frame, FrameHeader{type, static_cast<std::uint32_t>(payload.size())});
    frame += payload;
    return WriteAll(frame.data(), frame.size());
  }
  bool SendHello(int process, int devices, bool descendant = false) {
    Hello hello;
    hello.process = process;
    hello.descendant = descendant ? 1 : 0;
    hello.pid = static_cast<std::int32_t>(::getpid());
    hello.devices = devices;
    std::string payload;
    Append(payload, hello);
    return SendFrame(FrameType::kHello, payload);
  }
  // Names: (id, text) pairs.
  bool SendNames(const std::vector<std::pair<std::uint32_t, std::string>>& names) {
    return SendFrame(FrameType::kNames, NumberedStrings(names));
  }
  bool SendOps(std::int32_t device, const WireOp* ops, std::uint32_t count,
               std::uint32_t thread = 0, std::int64_t thread_time_ps = 0,
               std::uint32_t state_version = 0, std::uint64_t ops_sent = 0) {
    std::string payload;
    OpsHeader header;
    header.device = device;
    header.thread = thread;
    header.thread_time_ps = thread_time_ps;
    header.state_version = state_version;
    header.ops_sent = ops_sent;
    header.count = count;
    Append(payload, header);
    payload.append(reinterpret_cast<const char*>(ops), count * sizeof(WireOp));
    return SendFrame(FrameType::kOps, payload);
  }
  // What this connection sends next comes after thread `after_thread`'s first `after_ops` ops.
  bool SendOrder(std::uint32_t thread, std::uint32_t after_thread, std::uint64_t after_ops) {
    std::string payload;
    OpsHeader header;
    header.device = kNoDevice;
    header.thread = thread;
    header.after_thread = after_thread;
    header.after_ops = after_ops;
    Append(payload, header);
    return SendFrame(FrameType::kOps, payload);
  }
  // (count, error name) pairs: what the process's CUDA calls returned.
  bool SendErrors(const std::vector<std::pair<std::uint32_t, std::string>>& errors) {
    return SendFrame(FrameType::kErrors, NumberedStrings(errors));
  }
  // A module the process loaded: its id, then its file's path (kModule) or its PTX
  // (kModulePtx); or known device contents: their id, then their bytes (kDeviceContents).
  bool SendModule(FrameType type, std::uint32_t id, std::string_view text) {
    std::string payload;
    Append(payload, id);
    payload.append(text);
    return SendFrame(type, payload);
  }
  bool SendThread(const ThreadState& state) {
    std::string payload;
    Append(payload, state);
    return SendFrame(FrameType::kThread, payload);
  }
  // Waits for the next frame; a kFatal frame's text lands in `fatal`.
  bool ReadReply(Reply& reply, std::string* fatal = nullptr) {
    std::string payload;
    std::size_t offset = 0;
    return ReadFrame(FrameType::kReply, &payload, fatal) && Read(payload, offset, reply);
  }
  bool SendData(const DataHeader& header, const std::string& comm, const void* bytes) {
    std::string payload;
    DataHeader h = header;
    h.comm_length = static_cast<std::uint32_t>(comm.size());
    Append(payload, h);
    payload += comm;
    payload.append(static_cast<const char*>(bytes), header.bytes);
    return SendFrame(FrameType::kData, payload);
  }
  // Waits for the answer to a kData frame: its bytes land in `bytes`.
  bool ReadData(DataReply& reply, std::string* bytes, std::string* fatal = nullptr) {
    std::string payload;
    std::size_t offset = 0;
    if (!ReadFrame(FrameType::kDataReply, &payload, fatal) || !Read(payload, offset, reply) ||
        payload.size() != offset + reply.bytes)
      return false;
    bytes->assign(payload, offset, reply.bytes);
    return true;
  }
  // The answer to the sleep or timed wait reported with `version`: 1 when it has come (its
  // time in `time`), 0 when nothing has yet and `wait` is false, -1 when the connection
  // failed or Myriad sent something else (a kFatal frame's text lands in `fatal`). Answers to
  // earlier timed waits, which their wakers ended, are dropped.
  int ReadTimer(std::uint32_t version, bool wait, std::int64_t* time, std::string* fatal) {
    for (;;) {
      if (!wait) {
        pollfd p{fd_, POLLIN, 0};
        // The system call itself: the preload library's poll() would report a wait.
        const long ready = ::syscall(SYS_poll, &p, 1, 0);
        if (ready == 0) return 0;
        if (ready < 0 && errno != EINTR) return -1;
        if (ready < 0) continue;
      }
      std::string payload;
      std::size_t offset = 0;
      TimerReply reply;
      if (!ReadFrame(FrameType::kTimer, &payload, fatal) || !Read(payload, offset, reply))
        return -1;
      if (reply.version != version) continue;
      *time = reply.time;
      return 1;
    }
  }
  int fd() const { return fd_; }

 private:
  // Repeated {u32 number, u32 length, text}: names and error tallies.
  static std::string NumberedStrings(
      const std::vector<std::pair<std::uint32_t, std::string>>& items) {
    std::string payload;
    for (const auto& [number, text] : items) {
      Append(payload, number);
      Append(payload, static_cast<std::uint32_t>(text.size()));
      payload += text;
    }
    return payload;
  }
  // Reads the next frame, which must be of type `want` (a kFatal frame's text lands in
  // `fatal`); false on anything else. A stale kTimer (see ReadTimer) is skipped.
  bool ReadFrame(FrameType want, std::string* payload, std::string* fatal) {
    for (;;) {
      FrameHeader header{};
      if (!ReadAll(&header, sizeof(header)) || header.length > MaxPayload(header.type))
        return false;
      payload->assign(header.length, '\0');
      if (!ReadAll(payload->data(), payload->size())) return false;
      if (header.type == FrameType::kFatal) {
        if (fatal) *fatal = *payload;
        return false;
      }
      if (header.type == FrameType::kTimer && want != FrameType::kTimer) continue;
      return header.type == want;
    }
  }
  bool WriteAll(const char* data, std::size_t size) {
    while (size > 0) {
      // MSG_NOSIGNAL: a closed connection is an error to report, not a SIGPIPE that kills
      // the user's process without a word.
      const ssize_t n = ::send(fd_, data, size, MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      data += n;
      size -= static_cast<std::size_t>(n);
    }
    return true;
  }
  bool ReadAll(void* data, std::size_t size) {
    char* p = static_cast<char*>(data);
    while (size > 0) {
      // The system call itself: the preload's read() wrapper reports blocking reads, and
      // this one happens while the shim holds the lock such a report takes.
      const ssize_t n = ::syscall(SYS_read, fd_, p, size);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      p += n;
      size -= static_cast<std::size_t>(n);
    }
    return true;
  }

  int fd_ = -1;
};

}  // namespace myriad::wire
