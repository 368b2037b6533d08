"""app_name: the program a user would name from the command line Darshan recorded."""

import pytest

from iosets.analyzer._ingest._app_name import app_name

CASES = [
    ("", ""),
    ("   ", ""),
    ("/opt/app/bin/lmp -in in.lj", "lmp"),
    ("./IO_test5.Linux -backend hdf5", "IO_test5.Linux"),
    ("/usr/bin/python3 -u /home/u/dlio/main.py workload=unet3d", "main.py"),
    ("python /a/b/train.py --x", "train.py"),
    ("python3.11 -X dev -W ignore -OO -B script.py", "script.py"),
    ("python -m torch.distributed.run --nproc_per_node 4 train.py", "torch.distributed.run"),
    ("python3 -um pkg.mod", "pkg.mod"),
    ("python -mpkg.mod", "pkg.mod"),
    ("python -c 'import os; print(os.getcwd())'", "python -c"),
    ("pypy3 bench.py", "bench.py"),
    ("/usr/bin/env python3 x.py", "x.py"),
    ("env -u HOME OMP_NUM_THREADS=4 python3 /work/run.py", "run.py"),
    ("java -jar /x/app.jar --port 8080", "app.jar"),
    ("java -cp a.jar:b.jar -Dlog=debug -Xmx4g -XX:+UseG1GC org.example.Main arg", "org.example.Main"),
    ("java -classpath lib/* com.acme.Sim", "com.acme.Sim"),
    ("julia -t 8 --project=. -O2 run.jl 100", "run.jl"),
    ("julia -t4 run.jl", "run.jl"),
    ("Rscript --vanilla /home/u/fit.R data.csv", "fit.R"),
    ("Rscript -e 'print(1)'", "Rscript -e"),
    ("R CMD BATCH analysis.R", "analysis.R"),
    ("perl -ne 'print if /x/' in.txt", "perl -e"),
    ("perl -Ilib tool.pl", "tool.pl"),
    ("ruby -rjson convert.rb", "convert.rb"),
    ("node --inspect server.js", "server.js"),
    ('"/opt/my apps/bin/sim" --steps 10', "sim"),
    ("python 'unbalanced quote.py", "unbalanced"),  # shlex fails: whitespace split
    ("/usr/bin/python3 <unknown args>", "python3"),  # Darshan could not read the arguments
    ("a.out <unknown args>", "a.out"),
    ("<unknown>", "<unknown>"),
    ("python3 /home/u/very/long/path/trai<TRUNCATED>", "trai"),  # cut short by Darshan
    ("python3 -m", "python3"),  # cut right after -m
    ("python3 -", "python3"),  # script on stdin
    ("python -- run.py", "run.py"),
    ("160345792", "160345792"),
]


@pytest.mark.parametrize("command_line, app", CASES, ids=[c or "<empty>" for c, _ in CASES])
def test_app_name(command_line, app):
    assert app_name(command_line) == app
