"""Rendering one request in one browser context, and turning what the browser
saw into a Scrapy response."""
