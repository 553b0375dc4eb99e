"""A Scrapy project the JOBDIR tests run as ``scrapy crawl jobsite`` in a
subprocess (``harness.py``), against the test site's ``/jobsite`` pages."""
