"""Loaded by the offline server test (PYTHONPATH): this process may talk to loopback only."""

import ipaddress
import socket

_connect = socket.socket.connect
_getaddrinfo = socket.getaddrinfo


def _loopback(host) -> bool:
    if host in ("localhost", "", None):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def connect(self, address):
    if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):
        raise OSError(f"network blocked by the offline test: {address[0]}")
    return _connect(self, address)


def getaddrinfo(host, *args, **kwargs):
    if not _loopback(host if not isinstance(host, bytes) else host.decode()):
        raise socket.gaierror(f"name resolution blocked by the offline test: {host}")
    return _getaddrinfo(host, *args, **kwargs)


socket.socket.connect = connect
socket.getaddrinfo = getaddrinfo
