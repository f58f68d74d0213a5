"""`pip install sdk/python` gives a working package: installed into a fresh virtual environment
(offline: Debian's setuptools and wheel, no build isolation) and imported from outside the
repository."""
import os
import subprocess
import sys
import tempfile
import unittest

SDK = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class InstallTest(unittest.TestCase):
    def test_pip_installs_the_package(self):
        with tempfile.TemporaryDirectory() as tmp:
            venv = os.path.join(tmp, "venv")
            subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", venv],
                           check=True)
            python = os.path.join(venv, "bin", "python")
            subprocess.run([python, "-m", "pip", "install", "-q", "--no-build-isolation",
                            "--no-index", SDK], check=True, capture_output=True)
            probe = ("import gpurent, gpurent.models as m; "
                     "print(gpurent.__file__); print(gpurent.Client.__name__, "
                     "gpurent.AsyncClient.__name__, m.Instance.__name__)")
            out = subprocess.run([python, "-c", probe], cwd=tmp, check=True,
                                 capture_output=True, text=True,
                                 env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
            where, names = out.stdout.splitlines()
            self.assertTrue(where.startswith(venv), where)
            self.assertEqual(names, "Client AsyncClient Instance")


if __name__ == "__main__":
    unittest.main()
