#!/usr/bin/env python3
# Generates constant tables as Rust source (scripts/crypt_tables.py rust-sha | rust-pi): SHA-2 round constants and initial values
# (FIPS 180-4 §4.2, §5.3: fractional parts of square and cube roots of primes) and the
# Blowfish P-array and S-boxes (the hexadecimal digits of pi's fraction, in order).
import sys
def primes(n):
    out=[];k=2
    while len(out)<n:
        if all(k%p for p in out if p*p<=k): out.append(k)
        k+=1
    return out
def iroot(x,k):
    lo,hi=0,1<<((x.bit_length()+k-1)//k+1)
    while lo<hi:
        m=(lo+hi+1)//2
        if m**k<=x: lo=m
        else: hi=m-1
    return lo
def frac_root(p,k,bits):
    return iroot(p<<(k*bits),k) & ((1<<bits)-1)
def pi_hex(ndigits):
    # pi * 16^n via Machin: pi = 16 atan(1/5) - 4 atan(1/239), with guard digits.
    n=ndigits+10
    one=1<<(4*n)
    def atan_inv(x):
        s=0;t=one//x;k=1;x2=x*x;sign=1
        while t:
            s+=sign*(t//k); t//=x2; k+=2; sign=-sign
        return s
    pi=16*atan_inv(5)-4*atan_inv(239)
    h=format(pi,'x')
    return h[1:1+ndigits]  # after the leading '3'
which=sys.argv[1]
if which=='sha':
    P=primes(80)
    print("K256", [hex(frac_root(p,3,32)) for p in P[:64]])
    print("H256", [hex(frac_root(p,2,32)) for p in P[:8]])
    print("K512", [hex(frac_root(p,3,64)) for p in P[:80]])
    print("H512", [hex(frac_root(p,2,64)) for p in P[:8]])
elif which=='pi':
    d=pi_hex(8*(18+1024))
    words=[d[i*8:i*8+8] for i in range(18+1024)]
    print(words[0], words[17], words[18], words[-1])

def rust_array(name, ty, vals, width):
    body = ", ".join(("0x%0*x" % (width, v)) for v in vals)
    return "pub(super) const %s: [%s; %d] = [%s];\n" % (name, ty, len(vals), body)
if which=='rust-sha':
    P=primes(80)
    print(rust_array("K256","u32",[frac_root(p,3,32) for p in P[:64]],8))
    print(rust_array("H256","u32",[frac_root(p,2,32) for p in P[:8]],8))
    print(rust_array("K512","u64",[frac_root(p,3,64) for p in P[:80]],16))
    print(rust_array("H512","u64",[frac_root(p,2,64) for p in P[:8]],16))
if which=='rust-pi':
    d=pi_hex(8*(18+1024))
    w=[int(d[i*8:i*8+8],16) for i in range(18+1024)]
    print(rust_array("P_INIT","u32",w[:18],8))
    for i in range(4):
        print(rust_array("S%d_INIT"%i,"u32",w[18+256*i:18+256*(i+1)],8))
