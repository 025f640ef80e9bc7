"""HTML pages: one template and stylesheet (:mod:`geoprobe.report.page`), escaped building blocks
(:mod:`geoprobe.report.blocks`) and static figure export (:mod:`geoprobe.report.export`)."""
