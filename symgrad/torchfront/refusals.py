"""torch functions symgrad refuses by design, each with the reason and what to do instead:
complex-valued transforms, random sampling and sparse layouts. (Other refusals live
next to the mappings of their family.)"""
from .dispatch import refuse

_FFT = ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
        "rfftn", "irfftn", "hfft", "ihfft", "hfft2", "ihfft2", "hfftn", "ihfftn")

refuse("symgrad's formulas are real-valued and an FFT takes or gives complex tensors; for a "
       "real transform, multiply by constant cosine and sine DFT matrices inside the function "
       "(its real and imaginary parts), which symgrad differentiates",
       *[f"torch.fft.{name}" for name in _FFT], "torch.stft", "Tensor.stft", "torch.istft",
       "Tensor.istft")

refuse("it draws random numbers, which a formula cannot reproduce; pass the noise in as an "
       "input instead (for a normal sample, mean + std * eps with eps an input, the "
       "reparameterisation)",
       "torch.normal", "torch.bernoulli", "Tensor.bernoulli", "torch.rand_like",
       "torch.randn_like", "torch.randint_like", "torch.poisson", "torch.multinomial",
       "Tensor.multinomial", "Tensor.exponential_", "Tensor.normal_", "Tensor.uniform_")

refuse("symgrad's tensors are dense; use the dense op on a dense tensor (torch.mm, "
       "torch.addmm with x.to_dense())",
       "torch.sparse.sampled_addmm", "torch.sparse.mm", "torch.sparse.addmm",
       "torch.sparse.sum", "torch.sparse.softmax", "torch.sparse.log_softmax",
       "torch._C._sparse.sparse_sampled_addmm", "torch._C._sparse._sparse_mm",
       "Tensor.to_sparse", "Tensor.to_sparse_csr", "Tensor.to_sparse_csc",
       "Tensor.to_sparse_bsr", "Tensor.to_sparse_bsc", "Tensor.to_sparse_coo")
