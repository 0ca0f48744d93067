"""DistributedOptimizer: averages gradients over the ranks while backward
runs (horovod/torch/optimizer.py).

A hook on each parameter's gradient accumulator starts that gradient's
allreduce as soon as it is ready (after ``backward_passes_per_step`` local
passes), so communication overlaps the rest of the backward pass; step()
waits for them (synchronize()) and then runs the wrapped optimizer.
"""

import os
import warnings
from contextlib import contextmanager

import torch

from hvd._checks import tensor_name
from hvd._collectives.enqueue import set_id
from hvd.common import Adasum, Average, adasum_unsupported, global_process_set, size
from hvd.torch.compression import Compression
from hvd.torch.functions import broadcast_object
from hvd.torch.mpi_ops import (allreduce_async_, grouped_allreduce_async_,
                               sparse_allreduce_async, synchronize)


def _elastic_job():
    """True in a worker of an elastic job: hvdrun sets HVD_ELASTIC=1
    (horovodrun HOROVOD_ELASTIC=1). Its size may grow after the optimizer
    is built, so the optimizer needs its hooks even at size 1."""
    return "1" in (os.environ.get("HVD_ELASTIC"), os.environ.get("HOROVOD_ELASTIC"))


def _split_list(items, n):
    """``items`` in n contiguous parts of (nearly) equal length."""
    k, m = divmod(len(items), n)
    return [items[i * k + min(i, m):(i + 1) * k + min(i + 1, m)] for i in range(n)]


class _DistributedOptimizer(torch.optim.Optimizer):
    """Mixed into the user's optimizer class by DistributedOptimizer()."""

    _hvd_distributed = True

    def __init__(self, params, named_parameters, compression, backward_passes_per_step=1,
                 op=Average, gradient_predivide_factor=1.0, groups=None, sparse_as_dense=False,
                 process_set=global_process_set):
        super(self.__class__, self).__init__(params)
        self._compression = compression

        if named_parameters is not None:
            named_parameters = list(named_parameters)
        else:
            named_parameters = [(f"allreduce.noname.{i}.{j}", v)
                                for i, param_group in enumerate(self.param_groups)
                                for j, v in enumerate(param_group["params"])]
        if any(not isinstance(p, tuple) for p in named_parameters):
            raise ValueError("named_parameters should be a sequence of tuples (name, parameter), "
                             "usually produced by model.named_parameters().")
        for k, _ in named_parameters:
            tensor_name(k)  # the names of the allreduces: str, no NUL

        dups = _DistributedOptimizer.find_duplicates([k for k, _ in named_parameters])
        if dups:
            raise ValueError("Parameter names in named_parameters must be unique. "
                             "Found duplicates: " + ", ".join(sorted(dups)))

        all_param_ids = {id(v) for param_group in self.param_groups
                         for v in param_group["params"]}
        named_param_ids = {id(v) for _, v in named_parameters}
        unnamed_param_ids = all_param_ids - named_param_ids
        if unnamed_param_ids:
            raise ValueError("named_parameters was specified, but one or more model parameters "
                             "were not named. Python object ids: "
                             + ", ".join(str(i) for i in unnamed_param_ids))

        self._parameter_names = {v: k for k, v in sorted(named_parameters, key=lambda kv: kv[0])}
        self.backward_passes_per_step = backward_passes_per_step
        self._allreduce_delay = {v: self.backward_passes_per_step
                                 for _, v in sorted(named_parameters, key=lambda kv: kv[0])}
        self.op = op
        self.gradient_predivide_factor = gradient_predivide_factor
        self.sparse_as_dense = sparse_as_dense
        self.process_set = process_set

        self._handles = {}
        self._grad_accs = []
        self._requires_update = set()
        self._synchronized = False
        self._should_synchronize = True

        if groups is not None:
            if not (isinstance(groups, list) or (isinstance(groups, int) and groups > 0)):
                raise ValueError("groups should be a positive integer or a list of lists of "
                                 "torch.Tensor.")
            if isinstance(groups, list):
                seen = set()
                for group in groups:
                    for p in group:
                        if not isinstance(p, torch.Tensor):
                            raise ValueError("groups must consist of torch.Tensor.")
                        if id(p) in seen:
                            raise ValueError("A parameter can only appear once in groups.")
                        seen.add(id(p))
        self._groups = groups
        self._p_to_group = {}
        self._group_counts = {}

        # At size 1 the allreduces are identities and are left out, except
        # in an elastic job (as Horovod does): it may grow, and a worker
        # whose optimizer has no hooks then never submits its gradients
        # (the others wait for them until the no-progress verdict).
        if self.process_set.included() and (size() > 1 or _elastic_job()):
            self._register_hooks()

    def load_state_dict(self, *args, **kwargs):
        self._handles = {}
        self._synchronized = False
        self._should_synchronize = True
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = self.backward_passes_per_step
        super(self.__class__, self).load_state_dict(*args, **kwargs)

    @staticmethod
    def find_duplicates(lst):
        seen, dups = set(), set()
        for el in lst:
            if el in seen:
                dups.add(el)
            seen.add(el)
        return dups

    def set_backward_passes_per_step(self, passes):
        self.backward_passes_per_step = passes
        for p in self._allreduce_delay:
            self._allreduce_delay[p] = self.backward_passes_per_step

    def _register_hooks(self):
        if self._groups is not None:
            p_list = [p for param_group in self.param_groups for p in param_group["params"]
                      if p.requires_grad]
            # Every rank forms the same groups: rank 0's parameter order decides.
            names = [self._parameter_names.get(p) for p in p_list]
            names = broadcast_object(names, root_rank=self.process_set.ranks[0]
                                     if self.process_set.ranks else 0,
                                     name="hvd.optimizer.groups", process_set=self.process_set)
            order = {n: i for i, n in enumerate(names)}
            p_list = sorted(p_list, key=lambda p: order[self._parameter_names.get(p)])

            if isinstance(self._groups, list):
                p_groups, grouped = [], set()
                p_ids = {id(p) for p in p_list}
                for group in self._groups:
                    p_groups.append([p for p in group if id(p) in p_ids])
                    grouped.update(id(p) for p in p_groups[-1])
                p_groups.extend([p] for p in p_list if id(p) not in grouped)
            else:
                p_groups = _split_list(p_list, self._groups)

            for group in (tuple(g) for g in p_groups if g):
                for p in group:
                    self._p_to_group[p] = group
                self._group_counts[group] = 0

        for param_group in self.param_groups:
            for p in param_group["params"]:
                if p.requires_grad:
                    self._requires_update.add(p)
                    p_tmp = p.expand_as(p)
                    grad_acc = p_tmp.grad_fn.next_functions[0][0]
                    grad_acc.register_hook(self._make_hook(p))
                    self._grad_accs.append(grad_acc)

    def _scale_factors(self):
        if self.op == Average:
            # Average divides by the number of ranks in the engine; split it
            # into a division before the sum and a multiplication after.
            return 1.0 / self.gradient_predivide_factor, self.gradient_predivide_factor
        return 1.0, 1.0

    def _allreduce_grad_async(self, p):
        if p.grad is None:
            # No gradient this step (e.g. an unused branch); other ranks may
            # have one, so take part with zeros.
            p.grad = p.data.new(p.size()).zero_()

        name = self._parameter_names.get(p)
        tensor = p.grad
        if tensor.is_sparse:
            if self.sparse_as_dense:
                tensor = tensor.to_dense()
            else:
                return sparse_allreduce_async(tensor, name=name, op=self.op,
                                              process_set=self.process_set), None

        tensor_compressed, ctx = self._compression.compress(tensor)
        prescale, postscale = self._scale_factors()
        handle = allreduce_async_(tensor_compressed, name=name, op=self.op,
                                  prescale_factor=prescale, postscale_factor=postscale,
                                  process_set=self.process_set)
        return handle, ctx

    def _grouped_allreduce_grad_async(self, ps):
        name = self._parameter_names.get(ps[0])
        for p in ps:
            if p.grad is None:
                p.grad = p.data.new(p.size()).zero_()
        compressed, ctxs = zip(*[self._compression.compress(p.grad) for p in ps])
        prescale, postscale = self._scale_factors()
        handle = grouped_allreduce_async_(list(compressed), name=name, op=self.op,
                                          prescale_factor=prescale, postscale_factor=postscale,
                                          process_set=self.process_set)
        return handle, ctxs

    def _make_hook(self, p):
        def hook(*ignore):
            if p in self._handles and self._handles[p][0] is not None:
                if self._allreduce_delay[p] <= 0:
                    raise AssertionError(
                        "Gradients were computed more than backward_passes_per_step times "
                        "before call to step(). Increase backward_passes_per_step to "
                        "accumulate gradients locally.")
            assert not p.grad.requires_grad
            assert self._allreduce_delay[p] > 0
            handle, ctx = None, None
            self._allreduce_delay[p] -= 1
            if self._allreduce_delay[p] == 0:
                if self._groups is not None:
                    group = self._p_to_group[p]
                    self._group_counts[group] += 1
                    if self._group_counts[group] == len(group):
                        handle, ctxs = self._grouped_allreduce_grad_async(group)
                        self._handles[group] = (handle, ctxs)
                        for gp in group:  # drop the placeholders of the members
                            self._handles.pop(gp, None)
                        self._group_counts[group] = 0
                        return
                else:
                    handle, ctx = self._allreduce_grad_async(p)
            self._handles[p] = (handle, ctx)
        return hook

    def synchronize(self):
        """Waits for every gradient's allreduce (starting those whose hooks
        did not fire) and writes the results into the gradients."""
        if not self.process_set.included():
            self._synchronized = True
            return

        completed = set()
        for x in self._handles:
            if isinstance(x, tuple):
                completed.update(x)
            else:
                completed.add(x)
        for p in self._requires_update - completed:
            if self._groups is not None and p in self._p_to_group:
                continue  # started below with its group
            self._handles[p] = self._allreduce_grad_async(p)

        # Groups whose members did not all fire: start them whole.
        if self._groups is not None:
            pending_groups = set()
            for p in list(self._handles):
                if not isinstance(p, tuple) and p in self._p_to_group:
                    pending_groups.add(self._p_to_group[p])
            for p in self._requires_update - completed:
                if p in self._p_to_group:
                    pending_groups.add(self._p_to_group[p])
            for group in pending_groups:
                for gp in group:
                    self._handles.pop(gp, None)
                self._handles[group] = self._grouped_allreduce_grad_async(group)
                self._group_counts[group] = 0

        for p, (handle, ctx) in list(self._handles.items()):
            if handle is None:
                self._handles[p] = self._allreduce_grad_async(p)

        for p, (handle, ctx) in self._handles.items():
            if isinstance(p, tuple):
                outputs = synchronize(handle)
                for gp, output, gctx in zip(p, outputs, ctx):
                    self._allreduce_delay[gp] = self.backward_passes_per_step
                    gp.grad.set_(self._compression.decompress(output, gctx))
            else:
                output = synchronize(handle)
                self._allreduce_delay[p] = self.backward_passes_per_step
                if p.grad.is_sparse:
                    aggregated = self._compression.decompress(output, ctx)
                    if not aggregated.is_sparse:
                        aggregated = aggregated.to_sparse()
                    p.grad.zero_().add_(aggregated)
                else:
                    p.grad.set_(self._compression.decompress(output, ctx))
        self._handles.clear()
        self._synchronized = True

    @contextmanager
    def skip_synchronize(self):
        """For a step() after an explicit synchronize() (e.g. to clip the
        averaged gradients): step() then does not synchronize again."""
        self._should_synchronize = False
        try:
            yield
        finally:
            self._should_synchronize = True

    def step(self, closure=None):
        if self._should_synchronize:
            if self._synchronized:
                warnings.warn("optimizer.step() called without optimizer.skip_synchronize() "
                              "context after optimizer.synchronize(). This can cause training "
                              "slowdown. You may want to consider using "
                              "optimizer.skip_synchronize() context if you use "
                              "optimizer.synchronize() in your code.")
            self.synchronize()
        self._synchronized = False
        return super(self.__class__, self).step(closure)

    def zero_grad(self, *args, **kwargs):
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but "
                                 "before optimizer.step() or optimizer.synchronize(). This is "
                                 "prohibited as it can cause a race condition.")
        return super(self.__class__, self).zero_grad(*args, **kwargs)


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none,
                         backward_passes_per_step=1, op=Average, gradient_predivide_factor=1.0,
                         num_groups=0, groups=None, sparse_as_dense=False,
                         process_set=global_process_set):
    """Wraps ``optimizer`` so that step() uses gradients reduced (averaged by
    default) over the ranks of ``process_set``.

    named_parameters          ``model.named_parameters()``: names the allreduces
    compression               Compression.none or Compression.fp16
    backward_passes_per_step  local backward passes (gradients accumulate) per step
    op                        Average (default) or Sum
    gradient_predivide_factor divide by it before the sum, by size/it after (Average)
    groups                    an int (that many allreduce groups) or lists of parameters
                              to allreduce together
    sparse_as_dense           allreduce sparse gradients as dense tensors
    """
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError("gradient_predivide_factor not supported with op != Average")
    if op is Adasum:
        raise NotImplementedError(adasum_unsupported())
    if num_groups != 0:
        warnings.warn("Parameter `num_groups` has been replaced by `groups`.",
                      DeprecationWarning)
        if groups is None:
            groups = num_groups
    if backward_passes_per_step <= 0:
        raise ValueError("backward_passes_per_step must be > 0")
    set_id(process_set)  # a registered ProcessSet

    cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
               dict(_DistributedOptimizer.__dict__))
    return cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step,
               op, gradient_predivide_factor, groups, sparse_as_dense, process_set)
