// Short aliases for Asio and Beast. Server sources only: engine/ and db/ never include this.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

namespace boost::asio::ssl {
class context;  // <boost/asio/ssl.hpp> only where TLS streams are used
}

namespace perfscope::server {
namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = net::ip::tcp;
}  // namespace perfscope::server
