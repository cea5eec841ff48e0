"""The PEP 517 build backend of this folder: a wheel holding herrscher_state.py, standard library
only, so `pip install ./clients/python` needs no index. Name, summary and Python bound come from
pyproject.toml; the version from herrscher_state.__version__ (read, not imported)."""

import base64
import hashlib
import os
import re
import zipfile

_HERE = os.path.dirname(os.path.abspath(__file__))
_MODULE = "herrscher_state.py"


def _field(text, key):
    m = re.search(r'^%s\s*=\s*"([^"]*)"' % re.escape(key), text, re.M)
    if not m:
        raise RuntimeError("pyproject.toml lacks %s" % key)
    return m.group(1)


def _meta():
    with open(os.path.join(_HERE, "pyproject.toml"), encoding="utf-8") as f:
        project = f.read()
    with open(os.path.join(_HERE, _MODULE), encoding="utf-8") as f:
        version = re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M)
    if not version:
        raise RuntimeError("%s lacks __version__" % _MODULE)
    return _field(project, "name"), version.group(1), _field(project, "description"), _field(project, "requires-python")


def _dist_info(name, version):
    return "%s-%s.dist-info" % (name.replace("-", "_"), version)


def _metadata(name, version, summary, python):
    return "Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nLicense: MIT\nRequires-Python: %s\n" % (name, version, summary, python)


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    name, version, summary, python = _meta()
    info = os.path.join(metadata_directory, _dist_info(name, version))
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata(name, version, summary, python))
    return os.path.basename(info)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name, version, summary, python = _meta()
    info = _dist_info(name, version)
    wheel = "%s-%s-py3-none-any.whl" % (name.replace("-", "_"), version)
    with open(os.path.join(_HERE, _MODULE), "rb") as f:
        module = f.read()
    files = [
        (_MODULE, module),
        (info + "/METADATA", _metadata(name, version, summary, python).encode()),
        (info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: herrscher-state build_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            z.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
        record.append(info + "/RECORD,,")
        z.writestr(info + "/RECORD", "\n".join(record) + "\n")
    return wheel
