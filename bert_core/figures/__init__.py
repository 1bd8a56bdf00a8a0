"""Plotly figure builders, one module per page: arrays in, figures out (no model code here)."""
