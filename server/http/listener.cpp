#include "server/http/listener.hpp"

#include "server/http/http_session.hpp"
#include "server/http/log.hpp"

namespace perfscope::server {

Listener::Listener(net::io_context& ioc, const SessionContext& ctx)
    : ioc_(ioc), acceptor_(net::make_strand(ioc)), ctx_(ctx) {}

Status Listener::open(const tcp::endpoint& endpoint) {
  beast::error_code ec;
  auto fail = [&](const char* what) {
    return Status::unavailable(std::string("cannot ") + what + " " + endpoint.address().to_string() + ":" +
                               std::to_string(endpoint.port()) + ": " + ec.message());
  };
  if (acceptor_.open(endpoint.protocol(), ec); ec) return fail("open");
  if (acceptor_.set_option(net::socket_base::reuse_address(true), ec); ec) return fail("configure");
  if (acceptor_.bind(endpoint, ec); ec) return fail("listen on");
  if (acceptor_.listen(net::socket_base::max_listen_connections, ec); ec) return fail("listen on");
  return Status();
}

tcp::endpoint Listener::local_endpoint() const {
  beast::error_code ec;
  return acceptor_.local_endpoint(ec);
}

void Listener::start() { do_accept(); }

void Listener::stop() {
  net::post(acceptor_.get_executor(), [self = shared_from_this()] {
    beast::error_code ec;
    self->acceptor_.close(ec);
  });
}

void Listener::do_accept() {
  acceptor_.async_accept(net::make_strand(ioc_), beast::bind_front_handler(&Listener::on_accept, shared_from_this()));
}

void Listener::refuse(tcp::socket socket, const std::string& message) {
  ++ctx_.load.refused_connections;
  const std::string body = R"({"error":{"code":"overloaded","message":")" + message + R"("}})";
  auto text = std::make_shared<const std::string>(
      "HTTP/1.1 503 Service Unavailable\r\nServer: perfscope\r\nRetry-After: 1\r\n"
      "Content-Type: application/json\r\nConnection: close\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body);
  auto s = std::make_shared<tcp::socket>(std::move(socket));
  net::async_write(*s, net::buffer(*text), [s, text](beast::error_code, std::size_t) {
    beast::error_code ignored;
    s->shutdown(tcp::socket::shutdown_both, ignored);
    s->close(ignored);
  });
}

void Listener::on_accept(beast::error_code ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
  // Whatever happens to this connection (a TLS stream that cannot be made, an allocation that
  // fails), the listener goes on accepting.
  try {
    accept_one(ec, std::move(socket));
  } catch (const std::exception& e) {
    log_error(std::string("a new connection failed: ") + e.what());
  }
  do_accept();
}

void Listener::accept_one(beast::error_code ec, tcp::socket socket) {
  beast::error_code peer_ec;
  const std::string client = ec ? std::string() : socket.remote_endpoint(peer_ec).address().to_string();
  if (ec) {
    log_warn("accept failed: " + ec.message());
  } else if (peer_ec) {
    // Gone before it could be counted: nothing to serve.
  } else if (ctx_.load.connections.load() >= ctx_.config.max_connections) {
    // Full: say so at once and close, rather than hold the client in a queue.
    refuse(std::move(socket), "too many connections; retry later");
  } else {
    bool over = false;
    {
      std::lock_guard lock(per_client_->mu);
      std::size_t& n = per_client_->open[client];
      over = ctx_.config.max_connections_per_client != 0 && n >= ctx_.config.max_connections_per_client;
      if (!over) ++n;
    }
    if (over) {
      refuse(std::move(socket), "too many connections from this client; retry later");
    } else {
      // The slot follows the connection into a WebSocket session on upgrade.
      ++ctx_.load.connections;
      std::shared_ptr<void> slot(nullptr, [load = &ctx_.load, per_client = per_client_, client](void*) {
        --load->connections;
        std::lock_guard lock(per_client->mu);
        if (auto it = per_client->open.find(client); it != per_client->open.end() && --it->second == 0) {
          per_client->open.erase(it);
        }
      });
      start_http_session(std::move(socket), ctx_, std::move(slot));
    }
  }
}

}  // namespace perfscope::server
