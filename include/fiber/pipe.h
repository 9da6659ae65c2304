// fiber::Pipe<T>: a pair of connected endpoints, like multiprocessing.Pipe.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <utility>

#include "fiber/errors.h"
#include "fiber/invoke.h"
#include "fiber/queue_ref.h"
#include "fiber/serialization.h"

namespace fiber {

template <class T>
class Connection;

template <class T>
std::pair<Connection<T>, Connection<T>> Pipe(bool duplex = true);

/// One end of a Pipe. send() delivers to the other end's recv(), in order. Passing an end to a
/// Process gives that process the end; close() ends this process's use of it. recv() throws
/// fiber::EOFError once nothing is left and no live process can send any more.
template <class T>
class Connection {
 public:
  Connection() = default;

  /// Sends one item to the other end. Throws fiber::Error on a closed or receive-only end.
  void send(const T& item) const {
    check_open("send");
    if (!send_.valid())
      throw Error("Connection::send: this end of a one-way pipe can only receive");
    send_.put(serial::to_bytes(item));
  }

  /// Receives the next item, waiting as long as needed.
  T recv() const {
    check_receivable("recv");
    return serial::from_bytes<T>(recv_.get(std::nullopt, "Connection::recv"));
  }

  /// Receives the next item; throws fiber::TimeoutError if none arrives within `timeout`.
  template <class Rep, class Period>
  T recv(std::chrono::duration<Rep, Period> timeout) const {
    check_receivable("recv");
    return serial::from_bytes<T>(recv_.get(
        std::chrono::duration_cast<std::chrono::microseconds>(timeout), "Connection::recv"));
  }

  /// True when recv() would not block (an item is waiting, or the other end is gone); waits up to
  /// `timeout` (zero: just look).
  template <class Rep = int64_t, class Period = std::micro>
  bool poll(std::chrono::duration<Rep, Period> timeout = std::chrono::microseconds(0)) const {
    check_receivable("poll");
    return recv_.poll(std::chrono::duration_cast<std::chrono::microseconds>(timeout));
  }

  /// Closes this end in this process. Further use here throws; the other end sees EOF once no
  /// process that can still send holds this end.
  void close() {
    if (!open_ || *open_ == false) return;
    *open_ = false;
    if (send_.valid()) send_.close_producer();
  }

  bool closed() const { return !open_ || !*open_; }
  bool readable() const { return recv_.valid(); }
  bool writable() const { return send_.valid(); }

  /// Wire form, used when the end is an argument of a Process.
  void fiber_save(serial::Writer& writer) const {
    check_open("pass to another process");
    if (send_.valid()) detail::HandleCollector::note_producer(send_.id());
    serial::save(writer, recv_.id());
    serial::save(writer, send_.id());
  }
  static Connection fiber_load(serial::Reader& reader) {
    const auto recv = serial::read<uint64_t>(reader);
    const auto send = serial::read<uint64_t>(reader);
    return Connection(detail::QueueRef(recv), detail::QueueRef(send));
  }

 private:
  friend std::pair<Connection<T>, Connection<T>> Pipe<T>(bool duplex);
  Connection(detail::QueueRef recv, detail::QueueRef send)
      : recv_(recv), send_(send), open_(std::make_shared<bool>(true)) {}

  void check_open(const char* what) const {
    if (closed()) throw Error(std::string("Connection::") + what + ": the connection is closed");
  }
  void check_receivable(const char* what) const {
    check_open(what);
    if (!recv_.valid())
      throw Error(std::string("Connection::") + what +
                  ": this end of a one-way pipe can only send");
  }

  detail::QueueRef recv_;
  detail::QueueRef send_;
  std::shared_ptr<bool> open_;  ///< Shared by copies in this process: closing one closes them all.
};

/// Creates a connected pair. With duplex = false the first end only receives and the second only
/// sends, as in Python.
template <class T>
std::pair<Connection<T>, Connection<T>> Pipe(bool duplex) {
  serial::require_serializable<T>();
  const auto forward = detail::QueueRef::create(true);  // second -> first
  if (!duplex) return {Connection<T>(forward, {}), Connection<T>({}, forward)};
  const auto backward = detail::QueueRef::create(true);  // first -> second
  return {Connection<T>(forward, backward), Connection<T>(backward, forward)};
}

}  // namespace fiber
