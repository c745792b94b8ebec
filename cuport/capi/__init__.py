"""capi"""
