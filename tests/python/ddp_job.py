"""The data-parallel job the tests run under torchrun (4 processes, gloo, CPU), each rank recorded
by the four watch lines into one store (a folder or an object-storage URL). The training script is
written into the test's folder; nothing is downloaded."""

import subprocess
import sys
import textwrap

SCRIPT = """
import os, sys, torch, torch.distributed as dist
sys.path[:0] = {path!r}
import somatize.torch as st
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
ddp = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
w = st.watch(ddp, opt, store={store!r}, run="ddp", every=1)
g = torch.Generator().manual_seed(rank)
for step in range({steps}):
    x = torch.randn(16, 8, generator=g)
    if rank == {nan_rank} and step == 10:
        x[0, 0] = float("nan")  # a bad sample on one rank
    if rank == {dies} and step == 6:
        os._exit(3)  # killed outright, mid-run
    loss = (ddp(x) ** 2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    w.step(loss)
w.close()
dist.destroy_process_group()
"""


def torchrun(tmp_path, store, steps, nan_rank=-1, dies=-1, timeout=180):
    """Run the job (`steps` steps of run "ddp" into `store`; rank `nan_rank` feeds a NaN at step
    10, rank `dies` exits at step 6; -1: none) with its script in `tmp_path`; torchrun's result."""
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent(SCRIPT.format(path=sys.path, store=str(store), steps=steps,
                                                    nan_rank=nan_rank, dies=dies)))
    # --standalone: a rendezvous of its own on a free local port.
    return subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           "--nproc_per_node", "4", str(script)], capture_output=True,
                          text=True, timeout=timeout)
