"""Real alert receivers on loopback for the trainwatch tests (run with /usr/bin/python3).

    alert_servers.py smtp PORTFILE MAILDIR      aiosmtpd; each message saved as MAILDIR/N.eml
    alert_servers.py http PORTFILE REQDIR PLAN  each POST saved as REQDIR/N.json (its path in N.path); the answer
                                                 is the first line of PLAN (removed when used):
                                                 200, 500, "429 SECONDS", hang, close; 200 when empty

The port chosen by the kernel is written to PORTFILE. Both stop on SIGTERM, and by
themselves after 10 minutes at the most.
"""

import http.server
import os
import signal
import socket
import sys
import threading
import time


def write_port(path, port):
    with open(path + ".tmp", "w") as f:
        f.write("%d\n" % port)
    os.rename(path + ".tmp", path)


def serve_smtp(portfile, maildir):
    from aiosmtpd.controller import Controller

    count = [0]

    class Handler:
        async def handle_DATA(self, server, session, envelope):
            count[0] += 1
            with open(os.path.join(maildir, "%d.eml" % count[0]), "wb") as f:
                f.write(("X-Envelope-From: %s\r\nX-Envelope-To: %s\r\n" % (
                    envelope.mail_from, ",".join(envelope.rcpt_tos))).encode())
                f.write(envelope.original_content)
            return "250 OK"

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    ctl = Controller(Handler(), hostname="127.0.0.1", port=port)
    ctl.start()
    write_port(portfile, port)
    try:
        signal.sigwait([signal.SIGTERM, signal.SIGINT]) if hasattr(signal, "sigwait") else time.sleep(600)
    finally:
        ctl.stop()


def serve_http(portfile, reqdir, plan):
    lock = threading.Lock()
    count = [0]

    def next_answer():
        with lock:
            try:
                with open(plan) as f:
                    lines = f.read().splitlines()
            except FileNotFoundError:
                lines = []
            if not lines:
                return "200"
            with open(plan, "w") as f:
                f.write("\n".join(lines[1:]) + ("\n" if lines[1:] else ""))
            return lines[0].strip()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            with lock:
                count[0] += 1
                n = count[0]
            answer = next_answer()
            with open(os.path.join(reqdir, "%d.json" % n), "wb") as f:
                f.write(body)
            with open(os.path.join(reqdir, "%d.answer" % n), "w") as f:
                f.write(answer + "\n")
            with open(os.path.join(reqdir, "%d.path" % n), "w") as f:
                f.write(self.path + "\n")
            if answer == "hang":
                time.sleep(30)
                return
            if answer == "close":
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            parts = answer.split()
            self.send_response(int(parts[0]))
            if parts[0] == "429":
                self.send_header("Retry-After", parts[1] if len(parts) > 1 else "1")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    write_port(portfile, srv.server_address[1])
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    signal.sigwait([signal.SIGTERM, signal.SIGINT])
    srv.shutdown()


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM, signal.SIGINT])
    threading.Timer(600, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
    if sys.argv[1] == "smtp":
        serve_smtp(sys.argv[2], sys.argv[3])
    else:
        serve_http(sys.argv[2], sys.argv[3], sys.argv[4])
    os._exit(0)
