"""TLS for the links of a run across machines (``mpvis run --listen``).

The central process serves TLS with a self-signed certificate made at the run's
start (by the ``openssl`` command: the standard library cannot make one); its
SHA-256 fingerprint is *pinned*: it travels with the token (``MPVIS_TLS_PIN``,
printed beside ``MPVIS_TOKEN`` in the command for the other machines), and a
collector refuses a central process whose certificate has another fingerprint.
No certificate authority is involved, so nothing is trusted but the run's own
certificate.  Loopback links (ranks to their collector) stay plain.
"""

from __future__ import annotations

import hashlib
import shutil
import ssl
import subprocess
import tempfile
from pathlib import Path

from mpvis.errors import MpvisError

__all__ = ["TlsError", "check_pin", "client_context", "fingerprint", "server_context"]


class TlsError(MpvisError):
    """TLS cannot be set up (no ``openssl``, a bad certificate) or a pin does not match."""


def fingerprint(der: bytes) -> str:
    """``sha256:<hex>`` of a certificate in DER form."""
    return "sha256:" + hashlib.sha256(der).hexdigest()


def server_context() -> tuple[ssl.SSLContext, str]:
    """A TLS server context with a fresh self-signed certificate, and its pin."""
    openssl = shutil.which("openssl")
    if openssl is None:
        raise TlsError("TLS needs the 'openssl' command to make the run's certificate")
    with tempfile.TemporaryDirectory(prefix="mpvis-tls-") as d:
        key, cert = Path(d) / "key.pem", Path(d) / "cert.pem"
        done = subprocess.run(
            [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-nodes", "-days", "7", "-subj", "/CN=mpvis run", "-keyout", str(key),
             "-out", str(cert)], capture_output=True, text=True, check=False, timeout=60)
        if done.returncode != 0:
            raise TlsError(f"openssl could not make a certificate: {done.stderr.strip()}")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(cert, key)
        der = ssl.PEM_cert_to_DER_cert(cert.read_text())
    return ctx, fingerprint(der)


def client_context() -> ssl.SSLContext:
    """A TLS client context that accepts the run's self-signed certificate: the
    caller checks the pin (:func:`check_pin`) before sending anything."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # pinned instead: see check_pin
    return ctx


def check_pin(ssl_object: ssl.SSLObject | ssl.SSLSocket | None, pin: str) -> None:
    """Raise :class:`TlsError` unless the peer's certificate has fingerprint ``pin``."""
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        raise TlsError("the central process presented no certificate")
    got = fingerprint(der)
    if got != pin:
        raise TlsError(f"the central process's certificate is {got}, not the pinned {pin}")
