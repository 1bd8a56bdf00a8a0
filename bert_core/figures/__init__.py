"""Plotly figure builders, one module per page: arrays in, figures out (no model code here).
May import: nothing of bert_core (numpy and plotly only), so a figure never reaches into a model."""
