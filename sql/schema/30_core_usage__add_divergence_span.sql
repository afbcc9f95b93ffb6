-- core.usage.divergence_span: shape of this request's changing value at that offset (classes, length, guess), never the text. Null when the log carried no request body.
alter table core.usage add column if not exists divergence_span varchar;
