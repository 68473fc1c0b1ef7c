"""Extending autograd: a LinearFunction with its own backward (ctx.save_for_backward,
ctx.needs_input_grad, returning one gradient per input), a MulConstant with a non-tensor
argument, torch.autograd.gradcheck on both, and an nn.Module that uses the Function.

Adapted from PyTorch's "Extending PyTorch" notes (torch.autograd.Function examples).
"""
import torch
import torch.nn as nn


class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output += bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad[1]:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad[2]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


class MulConstant(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, constant):
        ctx.constant = constant
        return tensor * constant

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.constant, None      # no gradient for the constant


linear = LinearFunction.apply
input = (torch.randn(20, 20, dtype=torch.double, requires_grad=True),
         torch.randn(30, 20, dtype=torch.double, requires_grad=True))
print("gradcheck LinearFunction:", torch.autograd.gradcheck(linear, input, eps=1e-6, atol=1e-4))
x = torch.randn(5, 3, dtype=torch.double, requires_grad=True)
print("gradcheck MulConstant:",
      torch.autograd.gradcheck(lambda t: MulConstant.apply(t, 2.5), (x,)))


class Linear(nn.Module):
    def __init__(self, input_features, output_features, bias=True):
        super().__init__()
        self.input_features = input_features
        self.output_features = output_features
        self.weight = nn.Parameter(torch.empty(output_features, input_features))
        if bias:
            self.bias = nn.Parameter(torch.empty(output_features))
        else:
            self.register_parameter("bias", None)
        nn.init.uniform_(self.weight, -0.1, 0.1)
        if self.bias is not None:
            nn.init.uniform_(self.bias, -0.1, 0.1)

    def forward(self, input):
        return LinearFunction.apply(input, self.weight, self.bias)

    def extra_repr(self):
        return f"input_features={self.input_features}, output_features={self.output_features}"


layer = Linear(4, 3).double()
inputs = torch.randn(6, 4, dtype=torch.double, requires_grad=True)
out = MulConstant.apply(layer(inputs), 3.0)
(out ** 2).sum().backward()
print("output", out[0].tolist())
print("weight.grad", layer.weight.grad.tolist())
print("bias.grad", layer.bias.grad.tolist())
print("input.grad row", inputs.grad[0].tolist())
