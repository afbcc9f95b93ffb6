-- stage.usage_rows.divergence_span: shape of this request's changing value at that offset (classes, length, guess), never the text. Null when the log carried no request body.
alter table stage.usage_rows add column if not exists divergence_span varchar;
